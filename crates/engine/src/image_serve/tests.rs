//! The image server against curl: ranges, HEAD, and nothing served for a wrong, expired or revoked token,
//! nor to a request from another source address than the BMC's.

use std::process::Command;

use super::*;

/// The address curl's requests come from by default (the tests' stand-in BMC).
const CURL: [IpAddr; 1] = [IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)];

fn settings(ttl: Duration) -> Settings {
    Settings { listen: "127.0.0.1:0".parse().unwrap(), tls: None, ttl }
}

/// The image: every byte's value is its offset mod 251 (a range read from the wrong offset shows).
fn image(dir: &Path) -> PathBuf {
    let p = dir.join("installer-24.04.iso");
    std::fs::write(&p, (0..100_000u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>()).unwrap();
    p
}

/// curl's status code, headers and body for `url` (insecure: a self-signed pair, as most BMCs accept).
async fn curl(url: &str, extra: &[&str]) -> (u16, String, Vec<u8>) {
    let (url, extra) = (url.to_owned(), extra.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().unwrap();
        let (h, b) = (dir.path().join("h"), dir.path().join("b"));
        let o = Command::new("curl")
            .args(["-sk", "--max-time", "10", "-o", b.to_str().unwrap(), "-D", h.to_str().unwrap()])
            .args(["-w", "%{http_code}"])
            .args(&extra)
            .arg(&url)
            .output()
            .unwrap();
        let code = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap_or(0);
        (code, std::fs::read_to_string(&h).unwrap_or_default(), std::fs::read(&b).unwrap_or_default())
    })
    .await
    .unwrap()
}

#[tokio::test]
async fn ranges_are_served_and_a_wrong_or_expired_token_gets_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = image(dir.path());
    let server = ImageServer::start(&settings(Duration::from_secs(60))).await.unwrap();
    let (url, offer) = server.offer(&file, "n1", &CURL).unwrap();
    assert!(url.starts_with(&format!("https://127.0.0.1:{}/image/", server.addr().port())), "{url}");
    assert!(url.ends_with("/installer-24.04.iso"), "{url}");

    // An ISO's primary volume descriptor, where a BMC reads first.
    let (code, headers, body) = curl(&url, &["--range", "32768-34815"]).await;
    assert_eq!(code, 206, "{headers}");
    assert!(headers.to_ascii_lowercase().contains("content-range: bytes 32768-34815/100000"), "{headers}");
    assert_eq!(body, (32768..34816u32).map(|i| (i % 251) as u8).collect::<Vec<u8>>());
    let (code, headers, body) = curl(&url, &["--head"]).await;
    assert_eq!(code, 200);
    assert!(headers.to_ascii_lowercase().contains("accept-ranges: bytes"), "{headers}");
    assert!(headers.to_ascii_lowercase().contains("content-length: 100000"), "{headers}");
    // (curl --head writes the headers as its output too: no image bytes.)
    assert!(body.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&body));
    let (code, _, body) = curl(&url, &[]).await;
    assert_eq!((code, body.len()), (200, 100_000));

    // A token one digit off, the right token with another name, a path with no token: 404, no body.
    let mut wrong = offer.token.clone().into_bytes();
    wrong[0] = if wrong[0] == b'0' { b'1' } else { b'0' };
    let wrong = url.replace(&offer.token, std::str::from_utf8(&wrong).unwrap());
    for u in [wrong, url.replace("installer-24.04.iso", "other.iso"), url.replace(&offer.token, "")] {
        let (code, _, body) = curl(&u, &["--range", "0-1023"]).await;
        assert_eq!((code, body.len()), (404, 0), "{u}");
    }
    let (code, _, body) = curl(&url, &["-X", "PUT", "--data", "x"]).await;
    assert_eq!((code, body.len()), (405, 0));

    let (served, refused) = server.served();
    assert_eq!(refused, 3);
    assert_eq!(served.len(), 1);
    assert_eq!((served[0].requests, served[0].ranges), (3, 1));
    assert_eq!(served[0].bytes, 2048 + 100_000);
    assert_eq!(served[0].token, offer.id);

    let (served, _) = server.stop();
    assert_eq!(served[0].requests, 3);
    let (code, _, body) = curl(&url, &["--range", "0-1023"]).await;
    assert!(code == 0 || code == 404, "{code}");
    assert!(body.is_empty());
}

#[tokio::test]
async fn an_expired_token_answers_404() {
    let dir = tempfile::tempdir().unwrap();
    let file = image(dir.path());
    let server = ImageServer::start(&settings(Duration::from_millis(400))).await.unwrap();
    let (url, _) = server.offer(&file, "n1", &CURL).unwrap();
    assert_eq!(curl(&url, &["--range", "0-9"]).await.0, 206);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (code, _, body) = curl(&url, &["--range", "0-9"]).await;
    assert_eq!((code, body.len()), (404, 0));
}

#[tokio::test]
async fn a_token_answers_only_its_bmc_address() {
    let dir = tempfile::tempdir().unwrap();
    let file = image(dir.path());
    let server = ImageServer::start(&settings(Duration::from_secs(60))).await.unwrap();
    // Two BMCs on loopback addresses of their own; curl binds each as its source, as a BMC's requests
    // come from its management address.
    let (a, b): (IpAddr, IpAddr) = ("127.83.0.1".parse().unwrap(), "127.83.0.2".parse().unwrap());
    let (url_a, _) = server.offer(&file, "n1", &[a]).unwrap();
    let (url_b, _) = server.offer(&file, "n2", &[b]).unwrap();
    let from = |ip: IpAddr| ["--interface".to_owned(), ip.to_string()];
    let get = |url: String, ip: IpAddr| async move {
        let f = from(ip);
        curl(&url, &[f[0].as_str(), f[1].as_str(), "--range", "0-2047"]).await
    };
    let (code, _, body) = get(url_a.clone(), a).await;
    assert_eq!((code, body.len()), (206, 2048));
    assert_eq!((get(url_b.clone(), b).await.0), 206);
    // Each BMC's URL from the other BMC, or from the jump host itself: 404 and not a byte.
    for (url, ip) in [(&url_a, b), (&url_b, a), (&url_a, CURL[0])] {
        let (code, _, body) = get(url.clone(), ip).await;
        assert_eq!((code, body.len()), (404, 0), "{url} from {ip}");
    }
    let (served, refused) = server.served();
    assert_eq!(refused, 3);
    assert_eq!(served.iter().map(|s| s.requests).sum::<u64>(), 2);
    // An offer to no address is refused before a token is made.
    assert!(server.offer(&file, "n1", &[]).unwrap_err().to_string().contains("no address of the BMC"));
}

#[tokio::test]
async fn revoking_a_bmcs_tokens_closes_its_urls_and_leaves_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let file = image(dir.path());
    let server = ImageServer::start(&settings(Duration::from_secs(60))).await.unwrap();
    let (url_1, o1) = server.offer(&file, "n1", &CURL).unwrap();
    let (url_2, _) = server.offer(&file, "n2", &CURL).unwrap();
    assert_eq!(curl(&url_1, &["--range", "0-99"]).await.0, 206);
    let revoked = server.revoke("n1");
    assert_eq!(revoked.len(), 1);
    assert_eq!((revoked[0].token.as_str(), revoked[0].requests, revoked[0].bytes), (o1.id.as_str(), 1, 100));
    let (code, _, body) = curl(&url_1, &["--range", "0-99"]).await;
    assert_eq!((code, body.len()), (404, 0), "n1's URL after its revocation");
    assert_eq!(curl(&url_2, &["--range", "0-99"]).await.0, 206, "n2's URL still answers");
    assert!(server.revoke("n1").is_empty(), "nothing left to revoke");
}

#[test]
fn settings_refuse_every_address_and_odd_values() {
    let c = |listen: &str, ttl: Option<&str>| ImageServerConfig {
        listen: Some(listen.into()),
        token_ttl: ttl.map(Into::into),
        ..ImageServerConfig::default()
    };
    let e = |c: ImageServerConfig| Settings::from_config(&c).unwrap_err().to_string();
    assert!(e(ImageServerConfig::default()).contains("not set"));
    assert!(e(c("0.0.0.0:8443", None)).contains("every address"));
    assert!(e(c("[::]:8443", None)).contains("every address"));
    assert!(e(c("oob-host:8443", None)).contains("not ADDR:PORT"));
    assert!(e(c("10.0.0.5:8443", Some("0s"))).contains("token-ttl"));
    assert!(e(c("10.0.0.5:8443", Some("30d"))).contains("token-ttl"));
    let s = Settings::from_config(&c("10.0.0.5:8443", Some("15m"))).unwrap();
    assert_eq!((s.listen.to_string(), s.ttl), ("10.0.0.5:8443".into(), Duration::from_secs(900)));
}

#[test]
fn only_plain_regular_files_are_offered() {
    let dir = tempfile::tempdir().unwrap();
    let spaced = dir.path().join("my image.iso");
    std::fs::write(&spaced, b"x").unwrap();
    assert!(image_file(&spaced).unwrap_err().to_string().contains("file name"));
    assert!(image_file(dir.path()).unwrap_err().to_string().contains("not a regular file"));
    assert!(image_file(&dir.path().join("missing.iso")).is_err());
}
