use super::*;

#[test]
fn watchdog_interval_is_half_of_watchdog_usec_for_this_process_only() {
    let ms = Duration::from_millis;
    assert_eq!(watchdog_interval(Some("400000"), None, 7), Some(ms(200)));
    assert_eq!(
        watchdog_interval(Some("400000"), Some("7"), 7),
        Some(ms(200))
    );
    assert_eq!(watchdog_interval(Some("400000"), Some("8"), 7), None);
    assert_eq!(watchdog_interval(None, None, 7), None);
    assert_eq!(watchdog_interval(Some("0"), None, 7), None);
    assert_eq!(watchdog_interval(Some("soon"), None, 7), None);
}

#[test]
fn sdnotify_sends_datagrams_to_a_path_and_to_an_abstract_socket() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notify.sock");
    let abstract_name = format!("payrecon-test-{}", uuid::Uuid::new_v4().simple());
    let by_path = UnixDatagram::bind(&path).unwrap();
    let by_name = {
        use std::os::linux::net::SocketAddrExt;
        let addr = SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        UnixDatagram::bind_addr(&addr).unwrap()
    };
    for (target, sock) in [
        (path.display().to_string(), &by_path),
        (format!("@{abstract_name}"), &by_name),
    ] {
        let n = Notifier::connect(&target).unwrap();
        n.ready("serving on\n127.0.0.1:1");
        n.watchdog();
        let mut buf = [0u8; 256];
        let len = sock.recv(&mut buf).unwrap();
        assert_eq!(
            &buf[..len],
            b"READY=1\nSTATUS=serving on 127.0.0.1:1",
            "{target}"
        );
        let len = sock.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"WATCHDOG=1", "{target}");
    }
}

#[test]
fn sdnotify_without_a_socket_is_a_no_op() {
    let n = Notifier::default();
    assert!(!n.is_enabled());
    n.ready("x");
    n.watchdog();
    assert!(Watchdog::systemd(Arc::new(n), Duration::from_secs(1)).is_none());
}
