//! DSP0266 protocol rules that apply to every resource: request checks (`OData-Version`, query
//! parameters), the query parameters the sim implements, and the `Link` / `Allow` response headers.
//!
//! Why here and not per resource: a real service applies these uniformly, and a client that gets away
//! with sending `OData-Version: 4.01` or `$expand` to a lax simulator breaks on the first real BMC.
//!
//! Query parameters (DSP0266 "Query parameters"):
//! - implemented: `only` (a one-member collection answers with that member), `$top` and `$skip` (page a
//!   collection's `Members`, with `Members@odata.nextLink`), `$select` (top-level properties, plus the
//!   `@odata.*` annotations), and on flavors that have it `$expand=.` / `$expand=*` with `$levels=1`
//!   (a collection's members embedded);
//! - `$`-prefixed parameters not in that list (`$filter`, `$levels` alone, unknown ones) and the
//!   Redfish parameters `excerpt` and `includeoriginofcondition`: 501 Not Implemented with
//!   `QueryNotSupported`, as the spec requires;
//! - other parameters not starting with `$`: ignored, as the spec recommends.

use axum::response::Response;
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde_json::{Map, Value};

use super::error;

/// The query parameters of one request, validated.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Query {
    pub only: bool,
    pub top: Option<usize>,
    pub skip: Option<usize>,
    pub select: Option<Vec<String>>,
    /// `$expand` (one level; `.` and `*` are the same here: collections link no `Links` section).
    pub expand: bool,
}

impl Query {
    /// No option that changes the document: it is served as rendered.
    pub fn is_plain(&self) -> bool {
        *self == Query::default()
    }
}

/// Minimal percent-decoding of one query component (`%24select` is `$select`).
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' if i + 2 < b.len() => {
                match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 3;
                        continue;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b'+' => out.push(b' '),
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

pub(super) fn not_implemented(param: &str) -> Response {
    error(
        StatusCode::NOT_IMPLEMENTED,
        "QueryNotSupported",
        &format!("Querying with the parameter '{param}' is not supported by the implementation."),
        &[param],
    )
}

fn bad_value(param: &str, value: &str) -> Response {
    error(
        StatusCode::BAD_REQUEST,
        "QueryParameterValueFormatError",
        &format!(
            "The value '{value}' for the parameter {param} is of a different format than the parameter can accept."
        ),
        &[value, param],
    )
}

/// Parses and validates the query string.
pub(super) fn parse_query(raw: Option<&str>) -> Result<Query, Response> {
    let mut q = Query::default();
    for part in raw.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').unwrap_or((part, ""));
        let (k, v) = (decode(k), decode(v));
        let number = || v.parse::<usize>().map_err(|_| bad_value(&k, &v));
        match k.as_str() {
            "only" => q.only = true,
            "$top" => q.top = Some(number()?),
            "$skip" => q.skip = Some(number()?),
            "$select" => {
                let props: Vec<String> =
                    v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect();
                if props.is_empty() {
                    return Err(bad_value(&k, &v));
                }
                q.select = Some(props);
            }
            "$expand" => match v.as_str() {
                "." | "*" | ".($levels=1)" | "*($levels=1)" => q.expand = true,
                _ => return Err(bad_value(&k, &v)),
            },
            "excerpt" | "includeoriginofcondition" => return Err(not_implemented(&k)),
            other if other.starts_with('$') => return Err(not_implemented(other)),
            _ => {}
        }
    }
    if q.only && (q.top.is_some() || q.skip.is_some() || q.select.is_some() || q.expand) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "QueryCombinationInvalid",
            "Two or more query parameters in the request cannot be used together.",
            &[],
        ));
    }
    Ok(q)
}

/// `OData-Version` other than 4.0 in the request: 412 (DSP0266 "Request headers").
pub(super) fn check_odata_version(headers: &HeaderMap) -> Result<(), Response> {
    match headers.get("OData-Version").map(|v| v.to_str().unwrap_or("").trim()) {
        None | Some("4.0") => Ok(()),
        Some(other) => Err(error(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            &format!("The requested OData-Version '{other}' is not supported; this service supports 4.0."),
            &[],
        )),
    }
}

fn is_collection(v: &Value) -> bool {
    v.get("Members").is_some_and(Value::is_array)
}

/// `$top`, `$skip` and `$select` on a rendered resource. `only` is handled by the caller (it needs
/// another GET). `path` is the request path, for `Members@odata.nextLink`.
pub(super) fn apply(v: Value, q: &Query, path: &str) -> Value {
    let Value::Object(mut m) = v else { return v };
    if (q.top.is_some() || q.skip.is_some())
        && let Some(Value::Array(members)) = m.get_mut("Members")
    {
        let total = members.len();
        let skip = q.skip.unwrap_or(0).min(total);
        let top = q.top.unwrap_or(total);
        let page: Vec<Value> = members.drain(..).skip(skip).take(top).collect();
        let next = skip + page.len();
        *members = page;
        if next < total {
            m.insert(
                "Members@odata.nextLink".into(),
                Value::String(format!(
                    "{path}?$skip={next}{}",
                    q.top.map(|t| format!("&$top={t}")).unwrap_or_default()
                )),
            );
        }
    }
    if let Some(props) = &q.select {
        let keep = |k: &str| {
            k.starts_with("@odata.") || props.iter().any(|p| p == k || p.split('/').next() == Some(k))
        };
        m = m.into_iter().filter(|(k, _)| keep(k)).collect::<Map<_, _>>();
    }
    Value::Object(m)
}

/// The one member of a collection, if `only` applies to it (exactly one member).
pub(super) fn only_member(v: &Value) -> Result<Option<String>, Response> {
    if !is_collection(v) {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "QueryNotSupportedOnResource",
            "Querying is not supported on the requested resource.",
            &[],
        ));
    }
    let members = v["Members"].as_array().map(Vec::as_slice).unwrap_or_default();
    Ok(match members {
        [one] => one.get("@odata.id").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    })
}

/// `Link: <schema>; rel=describedby` from the resource's `@odata.type` (DSP0266 "Link header").
pub(super) fn describedby(v: &Value) -> Option<HeaderValue> {
    let ty = v.get("@odata.type")?.as_str()?.trim_start_matches('#');
    // `Namespace.vX_Y_Z.Type` -> `Namespace.vX_Y_Z.json`; unversioned `Type.Type` -> `Type.json`.
    let ns = ty.rsplit_once('.').map_or(ty, |(ns, _)| ns);
    HeaderValue::from_str(&format!("<https://redfish.dmtf.org/schemas/v1/{ns}.json>; rel=describedby")).ok()
}

/// The methods a resource supports, for the `Allow` header of GET and HEAD. Kept in step with the
/// routes (a test sends every method not listed and expects 405).
pub(super) fn allow(path: &str) -> &'static str {
    let rest = path.strip_prefix("/redfish/v1").unwrap_or(path);
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["SessionService", "Sessions"] | ["EventService", "Subscriptions"] => "GET, HEAD, POST",
        ["SessionService", "Sessions", _] | ["EventService", "Subscriptions", _] => "GET, HEAD, DELETE",
        ["Systems", _] | ["AccountService", "Accounts", _] | ["Systems", _, "Bios", "Settings"] => {
            "GET, HEAD, PATCH"
        }
        _ => "GET, HEAD",
    }
}

/// Adds `Allow` and, for a JSON resource, `Link` to a successful GET/HEAD response.
pub(super) fn add_headers(h: &mut HeaderMap, path: &str, body: Option<&Value>) {
    h.insert(header::ALLOW, HeaderValue::from_static(allow(path)));
    if let Some(link) = body.and_then(describedby) {
        h.insert(header::LINK, link);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn query_parsing_follows_dsp0266() {
        assert_eq!(parse_query(None).unwrap(), Query::default());
        assert_eq!(
            parse_query(Some("foo=bar")).unwrap(),
            Query::default(),
            "unknown non-$ parameters are ignored"
        );
        let q = parse_query(Some("%24top=2&$skip=1&$select=Name,Id")).unwrap();
        assert_eq!((q.top, q.skip), (Some(2), Some(1)));
        assert_eq!(q.select.unwrap(), ["Name", "Id"]);
        let q = parse_query(Some("$expand=.(%24levels=1)")).unwrap();
        assert!(q.expand);
        assert_eq!(parse_query(Some("$expand=.($levels=3)")).unwrap_err().status(), StatusCode::BAD_REQUEST);
        for p in ["$filter=Id eq 1", "$levels=2", "$bogus", "excerpt"] {
            assert_eq!(parse_query(Some(p)).unwrap_err().status(), StatusCode::NOT_IMPLEMENTED, "{p}");
        }
        assert_eq!(parse_query(Some("$top=x")).unwrap_err().status(), StatusCode::BAD_REQUEST);
        assert_eq!(parse_query(Some("only&$top=1")).unwrap_err().status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn paging_selection_and_link() {
        let members: Vec<Value> = (1..=5).map(|i| json!({"@odata.id": format!("/c/{i}")})).collect();
        let c = json!({"@odata.id": "/c", "@odata.type": "#XCollection.XCollection", "Name": "c",
                       "Members": members, "Members@odata.count": 5});
        let q = Query { top: Some(2), skip: Some(1), ..Query::default() };
        let v = apply(c.clone(), &q, "/c");
        assert_eq!(v["Members"].as_array().unwrap().len(), 2);
        assert_eq!(v["Members"][0]["@odata.id"], "/c/2");
        assert_eq!(v["Members@odata.count"], 5, "the count is the collection's, not the page's");
        assert_eq!(v["Members@odata.nextLink"], "/c?$skip=3&$top=2");
        let v = apply(c.clone(), &Query { select: Some(vec!["Name".into()]), ..Query::default() }, "/c");
        assert_eq!(v.as_object().unwrap().keys().collect::<Vec<_>>(), ["@odata.id", "@odata.type", "Name"]);
        assert_eq!(only_member(&c).unwrap(), None);
        assert!(only_member(&json!({"Id": "x"})).is_err());
        let link = describedby(&json!({"@odata.type": "#ComputerSystem.v1_22_0.ComputerSystem"})).unwrap();
        assert_eq!(
            link,
            "<https://redfish.dmtf.org/schemas/v1/ComputerSystem.v1_22_0.json>; rel=describedby"
        );
        let link = describedby(&c).unwrap();
        assert_eq!(link, "<https://redfish.dmtf.org/schemas/v1/XCollection.json>; rel=describedby");
    }
}
