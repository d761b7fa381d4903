//! The OpenAPI document, generated from the route table (every route, its access rule, its summary) and
//! the request/response types' `utoipa::ToSchema` derives. It is committed as `crates/server/openapi.json`;
//! a test fails when the two differ (`LIFELINE_UPDATE_OPENAPI=1 cargo test -p lifeline-server` rewrites it).

use utoipa::PartialSchema;
use utoipa::openapi::path::{Operation, OperationBuilder, ParameterBuilder, ParameterIn, PathItem};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ArrayBuilder, Schema};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, HttpMethod, InfoBuilder, OpenApi, OpenApiBuilder, PathsBuilder, Ref,
    RefOr, Required, ResponseBuilder,
};

use crate::access::{Access, Answer, Route, Schemas};

fn http_method(m: &axum::http::Method) -> HttpMethod {
    match *m {
        axum::http::Method::POST => HttpMethod::Post,
        axum::http::Method::PUT => HttpMethod::Put,
        axum::http::Method::DELETE => HttpMethod::Delete,
        axum::http::Method::PATCH => HttpMethod::Patch,
        _ => HttpMethod::Get,
    }
}

fn operation(r: &Route) -> Operation {
    let mut op = OperationBuilder::new().summary(Some(r.summary)).tag(r.tag);
    let mut description = match r.access {
        Access::Public => "No authentication.".to_owned(),
        Access::AtLeast(role) => format!("Role: {} or above.", role.as_str()),
    };
    if r.method != axum::http::Method::GET {
        description.push_str(" Browser sessions send `X-CSRF-Token`; `Idempotency-Key` makes a retried action return its first outcome.");
    }
    op = op.description(Some(description));
    for seg in r.path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))) {
        op = op.parameter(
            ParameterBuilder::new()
                .name(seg)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(String::schema())),
        );
    }
    if let Some(body) = r.body {
        op = op.request_body(Some(
            RequestBodyBuilder::new()
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(Ref::from_schema_name(body))).build(),
                )
                .build(),
        ));
    }
    op = match &r.answer {
        Answer::Json { schema, list, .. } => {
            let one = Ref::from_schema_name(schema.as_str());
            let schema: RefOr<Schema> =
                if *list { ArrayBuilder::new().items(one).build().into() } else { one.into() };
            let ok = ResponseBuilder::new()
                .description("OK")
                .content("application/json", ContentBuilder::new().schema(Some(schema)).build());
            op.response("200", ok.build())
        }
        Answer::Text { content_type } => op.response(
            "200",
            ResponseBuilder::new()
                .description("OK")
                .content(*content_type, ContentBuilder::new().schema(Some(String::schema())).build())
                .build(),
        ),
        Answer::WebSocket { frames } => op.response(
            "101",
            ResponseBuilder::new().description(format!("Switching Protocols (WebSocket): {frames}")).build(),
        ),
        Answer::Redirect => {
            op.response("303", ResponseBuilder::new().description("See Other: the page to open.").build())
        }
        // The OpenAPI test fails on this; the document still says that something comes back.
        Answer::Undeclared => op.response("200", ResponseBuilder::new().description("OK").build()),
    };
    let err = |d: &str| {
        ResponseBuilder::new()
            .description(d)
            .content(
                "application/json",
                ContentBuilder::new().schema(Some(Ref::from_schema_name("ErrorBody"))).build(),
            )
            .build()
    };
    if let Access::AtLeast(_) = r.access {
        op = op
            .response("401", err("No or bad credentials."))
            .response("403", err("The caller's role may not (or a missing CSRF token)."))
            .security(SecurityRequirement::new("bearer", Vec::<String>::new()))
            .security(SecurityRequirement::new("session", Vec::<String>::new()));
    }
    if r.path.starts_with("/api/") {
        op = op
            .response("400", err("usage: the request is wrong."))
            .response("404", err("not-found."))
            .response("409", err("conflict: the target is busy, or a replay's outcome is unknown."))
            .response("422", err("refused: a rule of the engine said no."))
            .response("502", err("failed: the BMC or switch did not do it."))
            .response("503", err("unavailable: the store or audit log cannot be written."));
    }
    op.build()
}

/// The document for a route table.
pub fn document_for(routes: &[Route]) -> OpenApi {
    let mut paths = PathsBuilder::new();
    for r in routes {
        paths = paths.path(r.path, PathItem::new(http_method(&r.method), operation(r)));
    }
    let mut answers = Schemas::new();
    for r in routes {
        if let Answer::Json { collect, .. } = &r.answer {
            collect(&mut answers);
        }
    }
    let mut components = ComponentsBuilder::new();
    for (name, schema) in answers {
        components = components.schema(name, schema);
    }
    let components = components
        .schema_from::<crate::error::ErrorBody>()
        .schema_from::<crate::error::Fingerprints>()
        .schema_from::<crate::auth::Role>()
        .schema_from::<crate::api::session::LoginRequest>()
        .schema_from::<crate::api::devices::PowerRequest>()
        .schema_from::<crate::api::devices::TargetsRequest>()
        .schema_from::<crate::api::devices::GroupPowerRequest>()
        .schema_from::<crate::api::media::MediaInsertRequest>()
        .schema_from::<crate::api::backups::RestoreRequest>()
        .schema_from::<crate::api::trust::TrustRequest>()
        .schema_from::<crate::api::faults::AgentReport>()
        .schema_from::<crate::api::lemons::Probation>()
        .schema_from::<crate::api::lemons::Recurrence>()
        .schema_from::<crate::api::lemons::Release>()
        .schema_from::<crate::api::lemons::Lemon>()
        .schema_from::<crate::api::lemons::Lemons>()
        .schema_from::<crate::api::runbooks::RunbookRequest>()
        .schema_from::<crate::api::runbooks::ApproveRequest>()
        .schema_from::<crate::api::admin::UserCreate>()
        .schema_from::<crate::api::admin::PasswordRequest>()
        .schema_from::<crate::api::admin::TokenCreate>()
        .security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        )
        .security_scheme(
            "session",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::new(crate::auth::SESSION_COOKIE))),
        )
        .build();
    OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Lifeline")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some("Out-of-band management for AI GPU clusters: the `lifeline serve` API."))
                .build(),
        )
        .paths(paths.build())
        .components(Some(components))
        .build()
}

/// Schema names that two routes' answer types both use with different schemas (the document would keep
/// only one of them).
pub fn schema_clashes(routes: &[Route]) -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, String> = Default::default();
    let mut clashes = Vec::new();
    for r in routes {
        if let Answer::Json { collect, .. } = &r.answer {
            let mut found = Schemas::new();
            collect(&mut found);
            for (name, schema) in found {
                let text = serde_json::to_string(&schema).unwrap_or_default();
                match seen.get(&name) {
                    Some(t) if *t != text => clashes.push(name),
                    Some(_) => {}
                    None => {
                        seen.insert(name, text);
                    }
                }
            }
        }
    }
    clashes
}

/// The served (and committed) document.
pub fn document() -> OpenApi {
    document_for(&crate::api::routes())
}

/// The served (and committed) document as JSON.
pub fn document_json() -> serde_json::Value {
    serde_json::to_value(document()).unwrap_or(serde_json::Value::Null)
}

/// Pretty JSON with a final newline, as committed.
pub fn document_text() -> String {
    let mut s = serde_json::to_string_pretty(&document_json()).unwrap_or_default();
    s.push('\n');
    s
}
