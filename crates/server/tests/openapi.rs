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
    let paths: std::collections::BTreeSet<&str> =
        lifeline_server::api::routes().iter().map(|r| r.path).collect();
    assert_eq!(v["paths"].as_object().unwrap().len(), paths.len(), "every path of the route table");
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

/// Every operation says what it answers: a JSON or text body with a schema on its 2xx response, or (with
/// no 2xx) a WebSocket upgrade or a redirect; every schema it names is in the components.
#[test]
fn every_operation_has_a_response_schema() {
    let v = lifeline_server::openapi::document_json();
    let schemas = v["components"]["schemas"].as_object().expect("components.schemas");
    let mut missing = Vec::new();
    let mut count = 0;
    for (path, ops) in v["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            count += 1;
            let responses = op["responses"].as_object().unwrap();
            let typed = responses.iter().filter(|(st, _)| st.starts_with('2')).any(|(_, r)| {
                r["content"]
                    .as_object()
                    .is_some_and(|c| !c.is_empty() && c.values().all(|m| m["schema"].is_object()))
            });
            let no_body = !responses.keys().any(|st| st.starts_with('2'))
                && (responses.get("303").is_some()
                    || responses
                        .get("101")
                        .is_some_and(|r| r["description"].as_str().is_some_and(|d| d.contains("WebSocket"))));
            if !typed && !no_body {
                missing.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "operations without a response schema ({} of {count}): {missing:#?}",
        missing.len()
    );
    // Every `$ref` resolves (a route's schema was collected, not just named).
    let text = v.to_string();
    for (i, _) in text.match_indices("#/components/schemas/") {
        let name: String = text[i + 21..].chars().take_while(|c| *c != '"').collect();
        assert!(schemas.contains_key(&name), "`{name}` is referenced but not in components.schemas");
    }
}

/// Two types answering under one schema name would overwrite each other in the document.
#[test]
fn no_two_answer_types_share_a_schema_name() {
    let clashes = lifeline_server::openapi::schema_clashes(&lifeline_server::api::routes());
    assert!(clashes.is_empty(), "schema names used by different types: {clashes:?}");
}

/// Handlers answer typed bodies: a `Json<Value>` in the API's source is a route whose answer the OpenAPI
/// document cannot describe. A source scan, since a handler's type is not visible at run time. (A store
/// row cannot be answered either: `.ci/check-deps` fails when a server file names the store crate; the
/// engine's views are what handlers answer.)
#[test]
fn no_handler_returns_untyped_json() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
    let mut found = Vec::new();
    let mut files = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            let l = line.replace(' ', "");
            let Some(i) = l.find("Json<") else { continue };
            let generic = &l[i..];
            let untyped = [
                "Json<Value>",
                "Json<serde_json::Value>",
                "Json<Vec<Value>>",
                "Json<Vec<serde_json::Value>>",
            ]
            .iter()
            .any(|bad| generic.starts_with(bad));
            if untyped {
                found.push(format!(
                    "{}:{}: {}",
                    p.file_name().unwrap().to_string_lossy(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(files >= 10, "read {files} files under {}", dir.display());
    assert!(found.is_empty(), "handlers answering untyped JSON: {found:#?}");
}

/// Every object in the document says what it holds: properties, a map's value schema
/// (`additionalProperties`), a reference or a composition. A bare `{"type": "object"}` (a
/// `#[schema(value_type = Object)]` over a `serde_json::Value`) is an answer the document does not
/// describe; a value that is free by nature (a rule's evidence as it recorded it) is declared as any JSON,
/// with a description saying whose shape it is.
#[test]
fn no_schema_is_an_untyped_object() {
    fn walk(at: String, s: &serde_json::Value, found: &mut Vec<String>) {
        match s {
            serde_json::Value::Object(m) => {
                let is_object = match m.get("type") {
                    Some(serde_json::Value::String(t)) => t == "object",
                    Some(serde_json::Value::Array(ts)) => ts.iter().any(|t| t == "object"),
                    _ => false,
                };
                let described =
                    m.get("properties").and_then(|p| p.as_object()).is_some_and(|p| !p.is_empty())
                        || ["additionalProperties", "$ref", "allOf", "oneOf", "anyOf"]
                            .iter()
                            .any(|k| m.contains_key(*k));
                if is_object && !described {
                    found.push(at.clone());
                }
                for (k, v) in m {
                    walk(format!("{at}/{k}"), v, found);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    walk(format!("{at}/{i}"), v, found);
                }
            }
            _ => {}
        }
    }
    let v = lifeline_server::openapi::document_json();
    let mut found = Vec::new();
    walk(String::new(), &v["components"], &mut found);
    walk(String::new(), &v["paths"], &mut found);
    assert!(found.is_empty(), "untyped objects ({}): {found:#?}", found.len());
}

/// Every JSON answer names its type: a 2xx body whose schema is any JSON (`{}`, what a handler answering
/// `serde_json::Value` documents) or an array of any JSON passes "has a schema" but tells a client
/// nothing, so each must be a reference, a typed schema or a composition of them. And the closed sets a
/// client branches on are enums in the document: a run's and a step's state, an audit row's outcome; a
/// fault's kind, an open set, carries the pattern of the kinds Lifeline writes.
#[test]
fn every_json_answer_names_its_type() {
    fn typed(s: &serde_json::Value) -> bool {
        let Some(m) = s.as_object() else { return false };
        if m.contains_key("$ref") || ["allOf", "oneOf", "anyOf"].iter().any(|k| m.contains_key(*k)) {
            return true;
        }
        match m.get("type").and_then(|t| t.as_str()) {
            Some("array") => m.get("items").is_some_and(typed),
            Some(_) => true,
            None => false,
        }
    }
    let v = lifeline_server::openapi::document_json();
    let mut untyped = Vec::new();
    let mut answers = 0;
    for (path, ops) in v["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            for (status, r) in op["responses"].as_object().unwrap() {
                let Some(json) = r["content"].get("application/json") else { continue };
                if !status.starts_with('2') {
                    continue;
                }
                answers += 1;
                if !typed(&json["schema"]) {
                    untyped.push(format!("{} {path} {status}: {}", method.to_uppercase(), json["schema"]));
                }
            }
        }
    }
    assert!(answers >= 50, "read {answers} JSON answers");
    assert!(untyped.is_empty(), "JSON answers of any shape ({}): {untyped:#?}", untyped.len());

    let schemas = &v["components"]["schemas"];
    let words = |name: &str| -> Vec<String> {
        schemas[name]["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} is not an enum: {}", schemas[name]))
            .iter()
            .map(|w| w.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        words("RunState"),
        lifeline_types::RunState::ALL.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        words("StepState"),
        lifeline_types::StepState::ALL.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    assert_eq!(
        words("AuditOutcome"),
        lifeline_types::AuditOutcome::ALL.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    );
    let refers = |schema: &str, field: &str, to: &str| {
        let f = &schemas[schema]["properties"][field];
        assert_eq!(f["$ref"], format!("#/components/schemas/{to}"), "{schema}.{field}: {f}");
    };
    refers("RunView", "state", "RunState");
    refers("StepView", "state", "StepState");
    refers("AuditRecord", "outcome", "AuditOutcome");
    refers("PlannedStep", "operation", "Op");
    let kind = &schemas["FaultKind"];
    assert_eq!(kind["pattern"], lifeline_types::FaultKind::PATTERN, "{kind}");
    refers("Fault", "kind", "FaultKind");
}

/// The fault kinds the schema lists are the kinds the code raises: each rule's constant, each switch
/// counter's kind, the scheduled backup's; and the console rules' and the correlation's kinds fall in the
/// open families the pattern admits.
#[test]
fn the_fault_kinds_the_schema_lists_are_the_ones_raised() {
    use lifeline_engine::fault_rules as rules;
    use lifeline_types::FaultKind;
    let counters = lifeline_engine::switch_evidence::counters::KINDS.map(|e| e.kind());
    let raised = [
        rules::BMC_UNREACHABLE,
        rules::HEALTH_CRITICAL,
        rules::SEL_CRITICAL,
        rules::GPU_MISSING,
        rules::AGENT_REPORT,
        rules::console::RAIL_DOWN,
        rules::cabling::CABLING,
        "backup-failed",
    ];
    for k in raised.iter().chain(counters.iter()) {
        assert!(FaultKind::KNOWN.contains(k), "`{k}` is raised but not in FaultKind::KNOWN");
    }
    assert_eq!(FaultKind::KNOWN.len(), raised.len() + counters.len(), "a listed kind nothing raises");
    for k in
        [format!("{}kernel-panic", rules::console::CONSOLE_PREFIX), format!("shared-{}", rules::SEL_CRITICAL)]
    {
        assert!(FaultKind::is_valid(&k), "{k}");
    }
}

/// The audit action in the document is the closed set the writer takes: the `AuditAction` enum lists
/// exactly `AuditAction::ALL`, in order, and a row's `action` admits it or (a row of another version) any
/// word, marked by `action_unknown`.
#[test]
fn the_audit_action_enum_is_the_writers_set() {
    use lifeline_types::AuditAction;
    let v = lifeline_server::openapi::document_json();
    let schemas = &v["components"]["schemas"];
    let listed: Vec<&str> = schemas["AuditAction"]["enum"]
        .as_array()
        .expect("AuditAction enum")
        .iter()
        .filter_map(|w| w.as_str())
        .collect();
    let words: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
    assert_eq!(listed, words, "the document's AuditAction is not the code's: regenerate openapi.json");
    let record = &schemas["AuditRecord"]["properties"];
    assert_eq!(record["action"]["$ref"], "#/components/schemas/LoggedAction", "{record}");
    assert_eq!(record["action_unknown"]["type"], "boolean", "{record}");
    let any_of = schemas["LoggedAction"]["anyOf"].as_array().expect("LoggedAction anyOf");
    assert_eq!(any_of[0]["$ref"], "#/components/schemas/AuditAction");
    assert_eq!(any_of[1]["type"], "string");
}
