//! Property tests: encode/decode round trips and split invariance on arbitrary bytes.

use super::*;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn encode_then_decode_round_trips(
        messages in prop::collection::vec((any::<bool>(), ".{0,300}"), 1..8),
        fragment in prop::option::of(1usize..64),
        server in any::<bool>(),
        chunks in prop::collection::vec(1usize..50, 1..5),
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let bytes = encode(role, |w, out| {
            w.set_fragment_size(fragment);
            for (binary, text) in &messages {
                if *binary { w.binary(out, text.as_bytes()) } else { w.text(out, text) }
            }
        });
        let expected: Vec<Seen> = messages
            .iter()
            .map(|(binary, text)| if *binary { Seen::Binary(text.as_bytes().to_vec()) } else { Seen::Text(text.clone()) })
            .collect();
        prop_assert_eq!(read_in_chunks(role, Limits::client(), &bytes, &chunks), expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic_and_split_invariant(
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        split in 0usize..200,
        server in any::<bool>(),
    ) {
        let role = if server { Role::Server } else { Role::Client };
        let limits = Limits { max_frame_size: 100, max_message_size: 150, max_fragments: 4 };
        let whole = read_in_chunks(role, limits, &bytes, &[usize::MAX]);
        let split = split.min(bytes.len());
        let parts = read_in_chunks(role, limits, &bytes, &[split.max(1), usize::MAX]);
        prop_assert_eq!(&whole, &parts);
        let moved = read_in_chunks_moving(role, limits, &bytes, &[split.max(1), 3]);
        prop_assert_eq!(whole, moved);
    }
}
