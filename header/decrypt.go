package header

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/c4gh-go/crypt4gh/internal/errkind"
	"github.com/c4gh-go/crypt4gh/keys"
)

// Contents is what one reader finds in a header: the packets its key opened
// and what they hold. The caller must call [Contents.Zero] once the keys
// are no longer needed.
type Contents struct {
	// DataKeys are the data keys, in header order, duplicates removed.
	// They all belong to data method [DataMethodChaCha20Poly1305].
	DataKeys [][32]byte
	// EditList is the edit list: lengths to skip and keep, alternately,
	// starting with a skip. It is nil when HasEditList is false.
	EditList []uint64
	// HasEditList reports whether an edit-list packet was found (its list
	// may be empty).
	HasEditList bool
	// Opened holds the indices into Header.Packets of the packets that the
	// key opened, in increasing order.
	Opened []int
	// Types holds the packet type ([PacketTypeDataKey],
	// [PacketTypeEditList] or another number) of each opened packet, in
	// the order of Opened.
	Types []uint32
	// Payloads holds the plaintext payload of each opened packet, in the
	// order of Opened, padding included.
	Payloads [][]byte
}

// Zero overwrites the data keys and the payloads with zeros and drops all
// contents.
func (c *Contents) Zero() {
	for i := range c.DataKeys {
		clear(c.DataKeys[i][:])
	}
	for _, p := range c.Payloads {
		clear(p)
	}
	clear(c.EditList)
	*c = Contents{}
}

// sharedKey caches the packet key for one writer public key.
type sharedKey struct {
	key [keys.KeySize]byte
	ok  bool
}

// Decrypt opens every packet it can with the reader's key, a
// [*keys.SecretKey] or any other [keys.Opener] (a key agent's client), and
// returns what they hold.
//
// Packets that do not authenticate are skipped silently: they are for other
// readers. When sender is not nil, packets whose writer public key is not
// *sender are treated the same way, so that only a known writer is trusted.
// Packets of unknown encryption methods and payloads of unknown packet types
// are skipped too; bytes after a payload (padding) are ignored.
//
// Decrypt fails with [ErrNoDecryptablePacket] when no packet opens,
// [ErrNoDataKey] when packets open but none holds a data key for data
// method 0, [ErrMultipleEditLists] when two edit lists open,
// [ErrMixedDataMethods] when the data keys are for different data methods,
// [ErrInvalidPacket] when an opened payload is too short for its type, and
// [ErrTooManyPackets], before any cryptography, when the packets it would
// try come from more than [MaxWriterKeys] different writer keys. An error of
// the opener other than [ErrPacketAuth] (an agent that cannot be reached)
// stops Decrypt, which returns it wrapped.
func (h *Header) Decrypt(reader keys.Opener, sender *keys.PublicKey) (*Contents, error) {
	if keys.IsNil(reader) {
		return nil, errkind.New(errkind.Usage, "failed to decrypt header: no reader key")
	}
	shared := make(map[keys.PublicKey]*sharedKey)
	defer func() {
		for _, k := range shared {
			clear(k.key[:])
		}
	}()

	writers := make(map[keys.PublicKey]bool)
	for i := range h.Packets {
		p := &h.Packets[i]
		if p.Method == MethodX25519ChaCha20Poly1305 && (sender == nil || p.WriterPublicKey == *sender) {
			writers[p.WriterPublicKey] = true
			if len(writers) > MaxWriterKeys {
				return nil, fmt.Errorf("%w: packets from more than %d different writer keys", ErrTooManyPackets, MaxWriterKeys)
			}
		}
	}
	clear(writers)

	c := &Contents{}
	fail := func(err error) (*Contents, error) {
		c.Zero()
		return nil, err
	}
	seen := make(map[[32]byte]bool)
	defer clear(seen)
	var (
		otherSender   int
		editListAt    = -1
		dataMethodAt  = -1
		dataMethod    uint32
		total         = len(h.Packets)
		methodUnknown int
	)
	for i := range h.Packets {
		p := &h.Packets[i]
		if p.Method != MethodX25519ChaCha20Poly1305 {
			methodUnknown++
			continue
		}
		if sender != nil && p.WriterPublicKey != *sender {
			otherSender++
			continue
		}
		pt, err := openPacket(p, reader, shared)
		if errors.Is(err, ErrPacketAuth) {
			continue
		}
		if err != nil {
			return fail(fmt.Errorf("failed to open header packet %d of %d: %w", i+1, total, err))
		}
		c.Opened = append(c.Opened, i)
		c.Payloads = append(c.Payloads, pt)
		pl, err := parsePayload(pt)
		if err != nil {
			return fail(fmt.Errorf("header packet %d of %d: %w", i+1, total, err))
		}
		c.Types = append(c.Types, pl.typ)
		switch pl.typ {
		case PacketTypeDataKey:
			if dataMethodAt < 0 {
				dataMethodAt, dataMethod = i, pl.dataMethod
			} else if pl.dataMethod != dataMethod {
				clear(pl.dataKey[:])
				return fail(fmt.Errorf("%w: header packet %d has data method %d, packet %d has %d",
					ErrMixedDataMethods, dataMethodAt+1, dataMethod, i+1, pl.dataMethod))
			}
			if !seen[pl.dataKey] {
				if len(c.DataKeys) == MaxDataKeys {
					clear(pl.dataKey[:])
					return fail(fmt.Errorf("%w: more than %d data keys for this reader", ErrTooManyPackets, MaxDataKeys))
				}
				seen[pl.dataKey] = true
				c.DataKeys = append(c.DataKeys, pl.dataKey)
			}
			clear(pl.dataKey[:])
		case PacketTypeEditList:
			if editListAt >= 0 {
				return fail(fmt.Errorf("%w: header packets %d and %d both hold an edit list",
					ErrMultipleEditLists, editListAt+1, i+1))
			}
			editListAt = i
			c.EditList, c.HasEditList = pl.editList, true
		}
	}

	switch {
	case total == 0:
		return fail(noPackets{})
	case len(c.Opened) == 0 && otherSender > 0:
		if w, ok := h.openedBy(reader, sender); ok {
			return fail(&wrongSender{writer: w, sender: *sender})
		}
		fallthrough
	case len(c.Opened) == 0:
		return fail(fmt.Errorf("%w: %s", ErrNoDecryptablePacket, noneOpens(total, otherSender, methodUnknown, sender)))
	case dataMethodAt < 0:
		return fail(fmt.Errorf("%w: %s opened, none holds a data key", ErrNoDataKey, plural(len(c.Opened), "packet")))
	case dataMethod != DataMethodChaCha20Poly1305:
		return fail(fmt.Errorf("%w: the data keys are for unsupported data method %d", ErrNoDataKey, dataMethod))
	}
	return c, nil
}

// openPacket opens a method-0 packet with reader. A secret key or a
// keys.Reader computes the packet key once per writer key, kept in
// shared; another opener (an agent's client) opens each packet itself.
func openPacket(p *Packet, reader keys.Opener, shared map[keys.PublicKey]*sharedKey) ([]byte, error) {
	var compute func(keys.PublicKey) ([keys.KeySize]byte, error)
	switch r := reader.(type) {
	case *keys.SecretKey:
		compute = func(w keys.PublicKey) ([keys.KeySize]byte, error) { return keys.ReaderSharedKey(r, w) }
	case *keys.Reader:
		compute = r.SharedKey
	default:
		return p.Open(reader)
	}
	k := shared[p.WriterPublicKey]
	if k == nil {
		k = &sharedKey{}
		var err error
		k.key, err = compute(p.WriterPublicKey)
		k.ok = err == nil
		shared[p.WriterPublicKey] = k
	}
	if !k.ok {
		return nil, ErrPacketAuth
	}
	// p.open makes its failure ErrPacketAuth.
	return p.open(&k.key)
}

// wrongSender is ErrWrongSender with the writers, and also
// ErrNoDecryptablePacket: no packet from the sender opens.
type wrongSender struct{ writer, sender keys.PublicKey }

func (e *wrongSender) Error() string {
	return fmt.Sprintf("%v: the packets for this key were written by %s, not by %s", ErrWrongSender, e.writer, e.sender)
}

func (e *wrongSender) Unwrap() []error { return []error{ErrWrongSender, ErrNoDecryptablePacket} }

// noPackets is ErrNoPackets, and also ErrNoDecryptablePacket for callers
// that only ask whether the key opens the file. Its class is the first
// one's: the file is damaged, the key may be right.
type noPackets struct{}

func (noPackets) Error() string   { return ErrNoPackets.Error() }
func (noPackets) Unwrap() []error { return []error{ErrNoPackets, ErrNoDecryptablePacket} }

// openedBy returns the writer of a packet, not written by sender, that
// reader opens: the file is for reader, but from another writer. It tries
// at most MaxWriterKeys writers, as Decrypt does.
func (h *Header) openedBy(reader keys.Opener, sender *keys.PublicKey) (keys.PublicKey, bool) {
	tried := map[keys.PublicKey]bool{}
	for i := range h.Packets {
		p := &h.Packets[i]
		if p.Method != MethodX25519ChaCha20Poly1305 || p.WriterPublicKey == *sender || tried[p.WriterPublicKey] {
			continue
		}
		if len(tried) == MaxWriterKeys {
			break
		}
		tried[p.WriterPublicKey] = true
		if pt, err := p.Open(reader); err == nil {
			clear(pt)
			return p.WriterPublicKey, true
		}
	}
	return keys.PublicKey{}, false
}

// noneOpens says why no packet opened: of total packets, otherSender were
// skipped for their writer key and methodUnknown for their method.
func noneOpens(total, otherSender, methodUnknown int, sender *keys.PublicKey) string {
	var why []string
	if otherSender > 0 {
		why = append(why, fmt.Sprintf("%s from a writer other than %s", countOf(otherSender, total), sender))
	}
	if methodUnknown > 0 {
		why = append(why, fmt.Sprintf("%s of an unknown method", countOf(methodUnknown, total)))
	}
	msg := fmt.Sprintf("none of the %d packets opens", total)
	if total == 1 {
		msg = "the only packet does not open"
	}
	if len(why) > 0 {
		msg += " (" + strings.Join(why, "; ") + ")"
	}
	return msg
}

// countOf starts a clause about n of total packets: "it is", "1 is",
// "3 are", "all are".
func countOf(n, total int) string {
	switch {
	case total == 1:
		return "it is"
	case n == total:
		return "all are"
	case n == 1:
		return "1 is"
	}
	return fmt.Sprintf("%d are", n)
}

// New builds a header that gives dataKey (and editList, when it is not nil)
// to each recipient: for every recipient a data-key packet, then an
// edit-list packet when editList is not nil. A recipient listed twice gets
// its packets once. Nonces are read from rand (crypto/rand when nil).
//
// writer is the writer's secret key, whose public key every packet records
// (readers may check it as the sender). When writer is nil, New uses a fresh
// key pair that it discards afterwards, as the reference tool does without
// --sk. An edit list of more than [edit.MaxEntries] lengths is an error.
func New(writer *keys.SecretKey, recipients []keys.PublicKey, dataKey *[32]byte, editList []uint64, rand io.Reader) (*Header, error) {
	if dataKey == nil {
		return nil, errors.New("failed to create header: no data key")
	}
	payloads := [][]byte{DataKeyPayload(dataKey)}
	defer clear(payloads[0])
	if editList != nil {
		el, err := EditListPayload(editList)
		if err != nil {
			return nil, fmt.Errorf("failed to create header: %w", err)
		}
		payloads = append(payloads, el)
	}
	return Seal(writer, recipients, payloads, rand)
}

// Seal builds a header that gives every payload to every recipient, in
// that order: for each recipient, one packet per payload. A recipient
// listed twice gets its packets once. Nonces are read from rand
// (crypto/rand when nil). When writer is nil, a fresh key pair is used and
// discarded, as for [New]; it may be a secret key or a key that an agent
// holds. A header of more than [MaxPackets] packets is refused with
// [ErrTooManyPackets].
func Seal(writer keys.Writer, recipients []keys.PublicKey, payloads [][]byte, rand io.Reader) (*Header, error) {
	if len(recipients) == 0 {
		return nil, errkind.New(errkind.Usage, "failed to create header: no recipients")
	}
	unique := make([]keys.PublicKey, 0, len(recipients))
	seen := make(map[keys.PublicKey]bool, len(recipients))
	for _, pk := range recipients {
		if !seen[pk] {
			seen[pk] = true
			unique = append(unique, pk)
		}
	}
	if n := len(unique) * len(payloads); n > MaxPackets {
		// The caller asked for too much: a usage error, not damaged data.
		return nil, errkind.Wrap(errkind.Usage, fmt.Errorf("%w: %d recipients of %d packets each need %d packets (limit %d)",
			ErrTooManyPackets, len(unique), len(payloads), n, MaxPackets))
	}
	if isNilWriter(writer) {
		sk, err := keys.Generate(rand)
		if err != nil {
			return nil, fmt.Errorf("failed to create header: %w", err)
		}
		defer sk.Zero()
		writer = &sk
	}
	h := &Header{Packets: make([]Packet, 0, len(unique)*len(payloads))}
	for _, pk := range unique {
		for _, pl := range payloads {
			p, err := SealPacket(writer, pk, pl, rand)
			if err != nil {
				return nil, err
			}
			h.Packets = append(h.Packets, p)
		}
	}
	return h, nil
}

// plural returns n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
