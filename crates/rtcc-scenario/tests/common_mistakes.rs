//! The twenty most common mistakes in a scenario file, each refused with the field it is at and
//! a message that says what is wrong and what is allowed. These are the messages users see
//! (`rtcc validate`, `rtcc run`); a change of wording must keep each of them as precise.

use rtcc_scenario::{Scenario, ScenarioError};
use std::path::Path;

const BASE: &str = r#"
duration = "10s"
[path.forward]
capacity = "10Mbps"
delay = "20ms"
queue = "100ms"
[[flows]]
controller = "gcc"
"#;

const HOPS: &str = r#"
duration = "10s"
[[path.hops]]
name = "access"
forward = { capacity = "10Mbps" }
[[path.hops]]
name = "core"
forward = { capacity = "5Mbps" }
[[flows]]
controller = "gcc"
"#;

fn refused(text: &str) -> ScenarioError {
    match Scenario::from_toml_str(text, Path::new("."), "test.toml", None) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(e) => e,
    }
}

#[test]
fn the_twenty_most_common_mistakes_name_their_field_and_what_is_allowed() {
    let flow = |extra: &str| format!("{BASE}{extra}\n");
    let second = |extra: &str| format!("{BASE}[[flows]]\n{extra}\n");
    let cases: Vec<(&str, String, &str, &[&str])> = vec![
        (
            "misspelled flow field",
            flow("fsp = 30"),
            "flows[0].fsp",
            &["unknown field `fsp`", "`fps`"],
        ),
        (
            "field of another kind",
            flow("rate = \"1Mbps\""),
            "flows[0].rate",
            &[
                "a video flow does not take this field",
                "only cbr and audio",
            ],
        ),
        (
            "video field on a tcp flow",
            second("kind = \"tcp\"\ncontroller = \"cubic\"\nfps = 30"),
            "flows[1].fps",
            &["a tcp flow does not take this field", "only video flows"],
        ),
        (
            "unknown flow kind",
            second("kind = \"quic\""),
            "flows[1].kind",
            &["unknown flow kind \"quic\"", "video, cbr, audio, tcp, dash"],
        ),
        (
            "rate without a unit",
            BASE.replace("\"10Mbps\"", "\"10\""),
            "path.forward.capacity",
            &["10"],
        ),
        (
            "rate with a misspelled unit",
            BASE.replace("\"10Mbps\"", "\"10Mbmps\""),
            "path.forward.capacity",
            &["10Mbmps", "Mbps"],
        ),
        (
            "duration without a unit",
            BASE.replace("\"20ms\"", "\"20\""),
            "path.forward.delay",
            &["20"],
        ),
        (
            "unknown controller",
            BASE.replace("\"gcc\"", "\"gccc\""),
            "flows[0].controller",
            &["unknown controller \"gccc\"", "gcc"],
        ),
        (
            "misspelled controller parameter",
            flow("params = { profil = \"paper\" }"),
            "flows[0].params.profil",
            &["no parameter \"profil\"", "profile"],
        ),
        (
            "bad controller parameter value",
            flow("params = { profile = \"chrome\" }"),
            "flows[0].params",
            &["chrome"],
        ),
        (
            "flow without a controller",
            second("fps = 30"),
            "flows[1].controller",
            &["needs a controller", "gcc"],
        ),
        (
            "cbr flow without a rate",
            second("kind = \"cbr\""),
            "flows[1].rate",
            &["needs a rate"],
        ),
        (
            "unknown hop",
            format!("{HOPS}hops = [\"edge\"]\n"),
            "flows[0].hops[0]",
            &["unknown hop \"edge\"", "\"access\", \"core\""],
        ),
        (
            "hops on a one-link path",
            flow("hops = [\"path\"]"),
            "flows[0].hops",
            &["[[path.hops]]"],
        ),
        (
            "stop after the run",
            flow("stop = \"20s\""),
            "flows[0].stop",
            &["after the end of the run"],
        ),
        (
            "start after stop",
            flow("start = \"8s\"\nstop = \"5s\""),
            "flows[0].start",
            &["before the flow's stop"],
        ),
        (
            "misspelled link field",
            BASE.replace("delay =", "dealy ="),
            "path.forward.dealy",
            &["unknown field `dealy`", "delay"],
        ),
        (
            "unknown queue",
            BASE.replace("\"100ms\"", "\"codle\""),
            "path.forward.queue",
            &["codle"],
        ),
        (
            "two capacities",
            BASE.replace(
                "capacity = \"10Mbps\"",
                "capacity = \"10Mbps\"\ntrace = \"x.trace\"",
            ),
            "path.forward",
            &["only one of capacity, schedule, trace or token_bucket"],
        ),
        (
            "duplicate flow names",
            format!("{BASE}name = \"a\"\n[[flows]]\nname = \"a\"\ncontroller = \"gcc\"\n"),
            "flows[1].name",
            &["used by two flows"],
        ),
        (
            "ecn not a flag",
            flow("ecn = \"yes\""),
            "flows[0].ecn",
            &["expected true or false"],
        ),
        (
            "bad direction",
            flow("direction = \"up\""),
            "flows[0].direction",
            &["unknown direction \"up\"", "forward, reverse"],
        ),
    ];
    assert!(cases.len() >= 20);
    for (what, text, field, says) in cases {
        let e = refused(&text);
        assert_eq!(e.field, field, "{what}: the error names the field; got {e}");
        for s in says {
            assert!(
                e.message.contains(s),
                "{what}: expected the message to say {s:?}; got {e}"
            );
        }
    }
}

#[test]
fn a_flows_field_lists_come_from_its_kind() {
    // An unknown field lists what this kind takes (its own and the common fields), not every
    // field of every kind.
    let e = refused(&format!(
        "{BASE}[[flows]]\nkind = \"cbr\"\nrate = \"1Mbps\"\nsize = \"1B\"\n"
    ));
    assert_eq!(e.field, "flows[1].size");
    assert!(
        e.message.contains("`packet_size`") && e.message.contains("`start`"),
        "{e}"
    );
    assert!(
        !e.message.contains("`fps`"),
        "a cbr flow does not list video's fields: {e}"
    );
}
