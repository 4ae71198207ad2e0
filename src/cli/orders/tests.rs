use std::io::Read as _;

use super::NoCr;

#[test]
fn crlf_is_read_as_lf_and_any_other_cr_is_kept() {
    for (input, want) in [
        (&b"a\r\nb\rc\r"[..], &b"a\nb\rc\r"[..]),
        (b"\r\n\r\n", b"\n\n"),
        (b"x\r", b"x\r"),
        (b"", b""),
    ] {
        // One byte at a time too: a CR at the end of one read, its LF in the next.
        for chunk in [1usize, 3, 64] {
            let mut r = NoCr::new(input);
            let mut out = Vec::new();
            let mut buf = vec![0u8; chunk];
            loop {
                let n = r.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
            }
            assert_eq!(out, want, "{input:?} in reads of {chunk}");
        }
    }
}
