// Package c4gh encrypts and decrypts Crypt4GH files (GA4GH file
// encryption, version 1): a header that gives the data key to each
// recipient, followed by the encrypted segments of the body. It is the
// place to start; the packages it builds on handle each part of the format
// ([header], [body], [edit], [keys]) for callers that need more control.
//
// # Keys
//
// Readers and writers are X25519 key pairs, [keys.SecretKey] and
// [keys.PublicKey]. [keys.ParseSecretKey] and [keys.ParsePublicKey] read
// the key files of every Crypt4GH tool (crypt4gh, OpenSSH ed25519, PKCS#8
// and PKIX X25519); [keys.Generate] makes a new key.
//
// # Encrypting
//
// [NewWriter] returns an [io.WriteCloser]: what is written to it is
// encrypted for the recipients, and Close seals the last segment. [Encrypt]
// encrypts a whole stream at once, sealing segments in parallel. The writer
// key may be the sender's own secret key, so that readers can check who
// wrote the file, or a key made for this file only.
//
// # Decrypting
//
// [NewReader] reads and opens the header of a stream and returns an
// [io.Reader] of the plaintext that the file stands for: its edit list, if
// any, is applied. Copying it with [io.Copy] decrypts in parallel.
// [NewReaderAt] gives random access to the same plaintext over any
// [io.ReaderAt] of known size (a file, a buffer, an object in a store),
// reading and decrypting only the segments that a read touches. Both hold
// the data keys until their Close method erases them; the copy inside
// each ChaCha20-Poly1305 cipher of golang.org/x/crypto, which offers no
// way to erase it, is dropped for the garbage collector instead.
//
// To give a file to new readers or cut ranges out of it without decrypting
// the body, see package [reencrypt].
//
// # Errors
//
// Errors wrap sentinels of the package that found the problem; test them
// with [errors.Is]: [keys.ErrWrongPassphrase] for a key file,
// [header.ErrNotCrypt4GH] and [header.ErrTruncated] for a damaged header,
// [header.ErrNoDecryptablePacket] when the secret key is not a recipient,
// [body.ErrAuth] and [body.ErrTruncated] for a damaged body (as a
// [*body.SegmentError] that names the segment), [ErrMissingData] when the
// edit list reaches past the end of the body and [DecryptOptions.Strict] is
// set (else the file stands for what is there, as the specification reads
// it, and Missing reports it), and [edit.ErrBeyondEnd] for a range that
// starts after the data.
//
// A decryption that was interrupted can go on from the segment after the
// last one written: see [NewResumable]. A stream that fails part way may
// already have given out plaintext: write to a temporary file and keep it
// only on success.
//
// [header]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/header
// [body]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/body
// [edit]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/edit
// [keys]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/keys
// [reencrypt]: https://pkg.go.dev/github.com/c4gh-go/crypt4gh/reencrypt
package c4gh
