// Package header reads and writes the header of a Crypt4GH (GA4GH file
// encryption, version 1) file: the magic, the version, and the header packets
// that carry the data keys and the edit list for each recipient.
//
// # Parsing without keys
//
// [Parse] reads exactly the header bytes from a stream and returns the typed
// packets, leaving the stream at the first body segment. It does no
// cryptography: a packet stays sealed until [Packet.Open] or
// [Header.Decrypt] is given a reader's secret key. [Header.Marshal] gives the
// bytes back unchanged, so Marshal(Parse(b)) == b for every b that parses;
// packets of an unknown encryption method are kept as [Packet.Opaque].
//
// Parse trusts no length in the input. The limits [MaxPackets],
// [MaxPacketLength] and [MaxHeaderSize] bound what a header may claim, and
// [MaxWriterKeys] and [MaxDataKeys] what Decrypt tries; memory is allocated as
// the bytes arrive, so a header that claims gigabytes but ends early costs
// only what was actually read.
//
// # Decrypting
//
// [Header.Decrypt] tries every packet with the reader's key. Packets that do
// not authenticate belong to other readers and are skipped silently (as are
// packets from another writer when a sender is required); the result
// collects the data keys and the edit list of the packets that opened, as
// [Contents]. The caller must call [Contents.Zero] when done with the keys.
//
// # Writing
//
// [New] builds the header for a list of recipients: for each recipient a
// data-key packet and, when there is an edit list, an edit-list packet.
// [SealPacket], [DataKeyPayload] and [EditListPayload] build single packets
// for callers that need another layout (re-encryption, for example).
//
// # Errors
//
// Every error about the input wraps one of the exported sentinels, to be
// tested with [errors.Is]: [ErrEmptyInput], [ErrNotCrypt4GH],
// [ErrUnsupportedVersion], [ErrTruncated], [ErrTooManyPackets] and
// [ErrInvalidPacket] from parsing; [ErrPacketAuth] from opening one packet;
// [ErrNoDecryptablePacket], [ErrNoPackets], [ErrNoDataKey],
// [ErrMultipleEditLists], [ErrMixedDataMethods] and [ErrInvalidPacket] (an
// authenticated payload too short for its type) from decrypting a header. Read and write errors of the
// underlying stream are wrapped as they are, and so are the errors of
// [keys] when a key exchange fails while writing.
package header
