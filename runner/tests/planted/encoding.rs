//! Planted wrong bytes and words (part of `planted.rs`): every stated encoding field and SASS
//! instruction word with a bit flipped must make its case fail.

use super::*;

/// Selects one stated byte field.
type FieldOf = fn(&mut Stated) -> &mut Option<u8>;

/// Wrong bytes: for every case that states agreeing byte fields (FORMAT.md `encoding`), each
/// bit of each stated field flipped in turn must make the case fail (the bytes then decode to
/// another instruction, or are rejected where the case expects a completed run).
#[test]
fn planted_wrong_encodings_are_rejected() {
    let loaded = load(&atomcts::default_corpus());
    let opts = Options {
        profile: Profile::default(),
        race_budget: DEFAULT_BUDGET,
        cases_arg: "spec-cases".into(),
        adapter_arg: String::new(),
    };
    let (mut planted, mut problems, mut decoded_texts) = (0, Vec::new(), 0);
    for case in &loaded.cases {
        let Some((Encoding::Visa(stated), _)) = &case.encoding else {
            continue;
        };
        let Some((entries, at)) = &case.expect else {
            continue;
        };
        let state = build_state(case).unwrap();
        if !matches!(
            build_expectation(case, &state, entries, at).unwrap(),
            Expectation::Values(_)
        ) {
            continue;
        }
        let fields: [(&str, FieldOf); 4] = [
            ("op", |s| &mut s.op),
            ("exec_size", |s| &mut s.exec_size),
            ("surface", |s| &mut s.surface),
            ("channels", |s| &mut s.channels),
        ];
        // A field the instruction does not have, stated alone beside the others: DWORD_ATOMIC
        // has no Channels(ub), SVM_SCATTER4_SCALED no Op(ub) and no Surface(ub).
        let scatter4 = case.asm.contains("SVM_SCATTER4_SCALED");
        for (name, field) in fields {
            let foreign = if scatter4 {
                name == "op" || name == "surface"
            } else {
                name == "channels"
            };
            let mut wrong = *stated;
            if foreign && field(&mut wrong).is_none() {
                *field(&mut wrong) = Some(0x01);
                let mut c = case.clone();
                c.encoding = Some((Encoding::Visa(wrong), at.clone()));
                planted += 1;
                let r = run_case(&c, &mut atomcts_adapters::ReferenceAdapter, &opts);
                if r.status != Status::Fail {
                    problems.push(format!(
                        "{}: a stated {name} field, which the instruction lacks: {:?}",
                        case.id, r.status
                    ));
                }
            }
            for bit in 0..8 {
                let mut wrong = *stated;
                let Some(b) = field(&mut wrong) else {
                    continue;
                };
                *b ^= 1 << bit;
                let mut c = case.clone();
                c.encoding = Some((Encoding::Visa(wrong), at.clone()));
                planted += 1;
                let r = run_case(&c, &mut atomcts_adapters::ReferenceAdapter, &opts);
                if r.status != Status::Fail {
                    problems.push(format!(
                        "{}: {name} bit {bit} flipped: {:?}",
                        case.id, r.status
                    ));
                }
                // What the wrong bytes decode to is printed as text; that text must state
                // exactly those bytes.
                for f in &r.findings {
                    let Some(decoded) = f
                        .observed
                        .split_once("the bytes decode to `")
                        .and_then(|(_, t)| t.split_once('`'))
                        .map(|(t, _)| t)
                    else {
                        continue;
                    };
                    decoded_texts += 1;
                    if agree(decoded, &wrong) != Ok(Agreement::Agrees) {
                        problems.push(format!(
                            "{}: {name} bit {bit} flipped: the decoded text `{decoded}` does not state the bytes",
                            case.id
                        ));
                    }
                }
            }
        }
    }
    println!(
        "wrong encodings rejected: {} / {planted}",
        planted - problems.len()
    );
    assert!(planted > 40, "only {planted} wrong encodings planted");
    assert!(decoded_texts > 20, "only {decoded_texts} decoded texts");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Wrong words: for every SASS case that states its instruction word (FORMAT.md `encoding`)
/// and expects a completed run, each of the 64 bits flipped in turn must make the case fail
/// (every bit of the SPA 5.0 ATOM word belongs to a field: the word then decodes to another
/// instruction, or is rejected). A wrong word that decodes is reported with the text it
/// decodes to, which must state that word (or be a row the op table lacks).
#[test]
fn planted_wrong_sass_words_are_rejected() {
    use atomcts_reference::sass::encoding as sass;
    let loaded = load(&atomcts::default_corpus());
    let opts = Options {
        profile: Profile::default(),
        race_budget: DEFAULT_BUDGET,
        cases_arg: "spec-cases".into(),
        adapter_arg: String::new(),
    };
    let (mut planted, mut problems, mut decoded_texts, mut cases) = (0, Vec::new(), 0, 0);
    for case in &loaded.cases {
        let Some((Encoding::Sass(word), at)) = &case.encoding else {
            continue;
        };
        let Some((entries, eat)) = &case.expect else {
            continue;
        };
        let state = build_state(case).unwrap();
        if !matches!(
            build_expectation(case, &state, entries, eat).unwrap(),
            Expectation::Values(_)
        ) {
            continue;
        }
        cases += 1;
        for bit in 0..64 {
            let wrong = word ^ (1 << bit);
            let mut c = case.clone();
            c.encoding = Some((Encoding::Sass(wrong), at.clone()));
            planted += 1;
            let r = run_case(&c, &mut atomcts_adapters::ReferenceAdapter, &opts);
            if r.status != Status::Fail {
                problems.push(format!(
                    "{}: bit {bit} flipped ({wrong:#018x}): {:?}",
                    case.id, r.status
                ));
            }
            for f in &r.findings {
                let Some(decoded) = f
                    .observed
                    .split_once("the word decodes to `")
                    .and_then(|(_, t)| t.split_once('`'))
                    .map(|(t, _)| t)
                else {
                    continue;
                };
                // A text the front end rejects (a row the op table lacks, an odd pair) has
                // nothing to compare.
                match sass::agree(decoded, wrong) {
                    Ok(sass::Agreement::Agrees) => decoded_texts += 1,
                    Err(_) => {}
                    other => problems.push(format!(
                        "{}: bit {bit} flipped: the decoded text `{decoded}` does not state {wrong:#018x}: {other:?}",
                        case.id
                    )),
                }
            }
        }
    }
    println!(
        "wrong SASS words rejected: {} / {planted} ({cases} cases)",
        planted - problems.len()
    );
    assert!(cases >= 10, "only {cases} SASS cases state a word");
    assert!(decoded_texts > 200, "only {decoded_texts} decoded texts");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
