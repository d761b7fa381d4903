//! The committed OpenAPI document is the one the code generates.

#[test]
fn committed_openapi_matches_the_code() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("openapi.json");
    let now = lifeline_server::openapi::document_text();
    if std::env::var_os("LIFELINE_UPDATE_OPENAPI").is_some() {
        std::fs::write(&path, &now).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == now,
        "crates/server/openapi.json differs from the code: run `LIFELINE_UPDATE_OPENAPI=1 cargo test -p lifeline-server --test openapi` and commit it"
    );
    let v: serde_json::Value = serde_json::from_str(&now).unwrap();
    let power = &v["paths"]["/api/v1/devices/{name}/power"];
    assert!(
        power.get("get").is_some() && power.get("post").is_some(),
        "both methods of one path are documented"
    );
    assert_eq!(v["paths"].as_object().unwrap().len(), 58, "every path of the route table");
    // The overview's answer is typed: `total` and a count per state.
    let ok =
        &v["paths"]["/api/v1/summary"]["get"]["responses"]["200"]["content"]["application/json"]["schema"];
    assert_eq!(ok["$ref"], "#/components/schemas/Summary", "{ok}");
    let summary = &v["components"]["schemas"]["Summary"]["properties"];
    assert!(summary.get("total").is_some() && summary.get("counts").is_some(), "{summary}");
    let counts = &v["components"]["schemas"]["StateCounts"]["properties"];
    for s in [
        "healthy",
        "faulted",
        "recovering",
        "verifying",
        "waiting-approval",
        "escalated",
        "drained-by-lifeline",
        "unreachable",
        "unknown",
    ] {
        assert!(counts.get(s).is_some(), "StateCounts has no `{s}`: {counts}");
    }
}
