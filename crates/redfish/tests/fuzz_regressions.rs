//! Inputs the fuzz targets (`crates/redfish/fuzz`) found, kept as ordinary tests.

use lifeline_redfish::sse::{SseError, SseEvent, SseParser};

/// `sse`: an event that outgrew the limit made `push` drop the events completed before it in the same
/// read, so whether a BMC's alert reached us depended on how TCP chunked the stream.
#[test]
fn events_before_an_oversized_one_are_kept_whatever_the_chunking() {
    let mut stream = b"data: x\r\rdata:y\n\n".to_vec();
    stream.extend(b"data: ");
    stream.extend(std::iter::repeat_n(b'z', 200));
    let want = vec![
        SseEvent { data: "x".into(), ..SseEvent::default() },
        SseEvent { data: "y".into(), ..SseEvent::default() },
    ];
    let mut whole = SseParser::new(64);
    assert_eq!(whole.push(&stream), Ok(want.clone()));
    assert_eq!(whole.failure(), Some(&SseError::EventTooLarge { limit: 64 }));
    assert_eq!(whole.push(b"\n\ndata: late\n\n"), Err(SseError::EventTooLarge { limit: 64 }));

    let mut bytes = SseParser::new(64);
    let mut got = Vec::new();
    let mut err = None;
    for b in &stream {
        match bytes.push(std::slice::from_ref(b)) {
            Ok(ev) => got.extend(ev),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    assert_eq!(got, want);
    assert_eq!(err, Some(SseError::EventTooLarge { limit: 64 }));
}
