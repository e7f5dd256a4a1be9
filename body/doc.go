// Package body encrypts and decrypts the body of a Crypt4GH file: the
// sequence of segments that follows the header.
//
// # Format
//
// The plaintext is cut into segments of [SegmentSize] bytes (the last one
// may be shorter; an empty plaintext has no segments). Each segment is
// stored as a random 12-byte nonce followed by its ChaCha20-Poly1305
// (IETF) encryption under the data key, with no additional data, so a full
// segment takes [EncryptedSegmentSize] bytes and a segment of n bytes takes
// n + [Overhead]. [EncryptedSize] and [PlaintextSize] convert between the
// two lengths without reading anything.
//
// A file may carry several data keys (parts of the body encrypted under
// different keys). Every reader in this package takes the list of data
// keys, tries the key that opened the previous segment first and then the
// others; a segment that no key opens is an error. Some writers append an
// empty segment (28 bytes: a nonce and a tag) at the end of the body; the
// readers accept it and it contributes no plaintext.
//
// # Streams
//
// [NewWriter] and [NewReader] wrap an [io.Writer] and an [io.Reader] and
// process one segment at a time with one reused buffer. [NewReaderAt] gives
// random access to a body stored in an [io.ReaderAt]: it decrypts only the
// segments a read touches and may be used from several goroutines at once.
//
// # Parallel engine
//
// [Encrypt] and [Decrypt] process a whole stream with one reading
// goroutine, a number of crypto workers and one writing goroutine, over a
// fixed ring of reusable buffers: memory use does not depend on the length
// of the stream, reading and writing overlap with the cryptography, and the
// output is identical to what the sequential streams produce. A batch is
// 8 segments (512 KiB of plaintext) and costs 1 MiB, its input and its
// output; the ring holds 4 batches up to 8 workers and two segments a
// worker beyond. Inputs shorter than one batch are processed in the
// calling goroutine.
//
// # Errors
//
// A segment that fails authentication or is cut short is reported as a
// [*SegmentError] carrying the segment index and [ErrAuth] or
// [ErrTruncated]; test with [errors.Is] or [errors.As]. No plaintext from a
// failing segment, or from any segment after it, is ever returned or
// written. The format cannot detect whole segments removed from the end of
// the body, and a final segment cut short by more than its 28 bytes of
// overhead is indistinguishable from a forged one, so it is reported as
// [ErrAuth].
package body
