package difftest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	theirkeys "github.com/neicnordic/crypt4gh/keys"
	"github.com/neicnordic/crypt4gh/model/headers"
	"github.com/neicnordic/crypt4gh/streaming"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/keys"
)

// maxPlain bounds the plaintexts of the fuzz targets: four segments and
// a bit, enough for every boundary while the oracle's writer, which
// handles one byte at a time, stays fast.
const maxPlain = 4*body.SegmentSize + 17

// seedSizes are the plaintext lengths every target starts from: empty,
// one byte, around one segment, and a few segments.
var seedSizes = []uint32{0, 1, 65535, 65536, 65537, 2*65536 + 500, 3 * 65536}

// plainSize maps a fuzzed length into [0, maxPlain].
func plainSize(v uint32) int { return int(v % (maxPlain + 1)) }

// newRand returns the deterministic generator of one fuzz input.
func newRand(seed uint64) *rand.Rand {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	return rand.New(rand.NewChaCha8(s))
}

// plaintext returns n bytes that depend only on seed.
func plaintext(seed uint64, n int) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	binary.LittleEndian.PutUint64(s[8:], uint64(n))
	s[31] = 'p'
	p := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(p)
	return p
}

// identity is one key pair as both implementations read it from the same
// key files: a secret key file and a public key file, each written by one
// side in one of its formats.
type identity struct {
	name        string
	secret      keys.SecretKey // keys.ParseSecretKey of the secret key file
	public      keys.PublicKey // keys.ParsePublicKey of the public key file
	theirSecret [32]byte       // their ReadPrivateKey of the same file
	theirPublic [32]byte       // their ReadPublicKey of the same file
}

// secretFormat is a secret key file format that one side writes.
type secretFormat struct {
	name      string
	protected bool // the file needs a passphrase
	write     func(sk [32]byte, pass []byte) ([]byte, error)
}

// publicFormat is a public key file format that one side writes.
type publicFormat struct {
	name  string
	write func(pk [32]byte) ([]byte, error)
}

func theirWriteSecret(f func(io.Writer) error) ([]byte, error) {
	var b bytes.Buffer
	if err := f(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func ourSecret(kdf keys.KDF, comment string) func([32]byte, []byte) ([]byte, error) {
	return func(sk [32]byte, pass []byte) ([]byte, error) {
		k := keys.SecretKey(sk)
		return keys.MarshalSecretKey(&k, pass, kdf, comment, nil)
	}
}

// secretFormats are every secret key file format either side writes.
// Theirs always encrypts its crypt4gh keys with scrypt; with an empty
// passphrase that is its "no passphrase" key.
var secretFormats = []secretFormat{
	{"their crypt4gh (scrypt)", true, func(sk [32]byte, pass []byte) ([]byte, error) {
		return theirWriteSecret(func(w io.Writer) error { return theirkeys.WriteCrypt4GHX25519PrivateKey(w, sk, pass) })
	}},
	{"their PKCS#8", false, func(sk [32]byte, _ []byte) ([]byte, error) {
		return theirWriteSecret(func(w io.Writer) error { return theirkeys.WriteOpenSSLX25519PrivateKey(w, sk) })
	}},
	{"our crypt4gh scrypt", true, ourSecret(keys.KDFScrypt, "")},
	{"our crypt4gh bcrypt", true, ourSecret(keys.KDFBcrypt, "a comment")},
	{"our crypt4gh pbkdf2", true, ourSecret(keys.KDFPBKDF2, "")},
	{"our crypt4gh none", false, ourSecret(keys.KDFNone, "c")},
}

// publicFormats are every public key file format either side writes.
var publicFormats = []publicFormat{
	{"their crypt4gh", func(pk [32]byte) ([]byte, error) {
		return theirWriteSecret(func(w io.Writer) error { return theirkeys.WriteCrypt4GHX25519PublicKey(w, pk) })
	}},
	{"their PKIX", func(pk [32]byte) ([]byte, error) {
		return theirWriteSecret(func(w io.Writer) error { return theirkeys.WriteOpenSSLX25519PublicKey(w, pk) })
	}},
	{"our crypt4gh", func(pk [32]byte) ([]byte, error) { return keys.MarshalPublicKey(pk), nil }},
}

// ourParseSecret reads a secret key file with keys.ParseSecretKey.
func ourParseSecret(file, pass []byte) (keys.SecretKey, error) {
	return keys.ParseSecretKey(file, func() ([]byte, error) { return bytes.Clone(pass), nil })
}

// theirParseSecret reads a secret key file with the oracle. It wants a nil
// passphrase for files that are not protected.
func theirParseSecret(file, pass []byte, protected bool) (sk [32]byte, err error) {
	if !protected {
		pass = nil
	} else if pass == nil {
		pass = []byte{}
	}
	defer recoverOracle(&err)
	return theirkeys.ReadPrivateKey(bytes.NewReader(file), pass)
}

// theirParsePublic reads a public key file with the oracle.
func theirParsePublic(file []byte) (pk [32]byte, err error) {
	defer recoverOracle(&err)
	return theirkeys.ReadPublicKey(bytes.NewReader(file))
}

// recoverOracle turns a panic of the oracle into an error, so that a
// failing case says what happened instead of killing the test binary.
func recoverOracle(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("oracle panicked: %v", r)
	}
}

// makeIdentity writes a fresh key pair in the given formats and reads both
// files with both implementations, checking that they agree.
func makeIdentity(sf secretFormat, pf publicFormat) (identity, error) {
	id := identity{name: sf.name + " secret, " + pf.name + " public"}
	sk, err := keys.Generate(nil)
	if err != nil {
		return id, err
	}
	pass := []byte(nil)
	if sf.protected {
		pass = []byte("pass " + sf.name)
	}
	sfile, err := sf.write(sk, pass)
	if err != nil {
		return id, fmt.Errorf("%s: write: %w", sf.name, err)
	}
	pfile, err := pf.write(sk.Public())
	if err != nil {
		return id, fmt.Errorf("%s: write: %w", pf.name, err)
	}
	if id.secret, err = ourParseSecret(sfile, pass); err != nil {
		return id, fmt.Errorf("%s: ours: %w", sf.name, err)
	}
	if id.theirSecret, err = theirParseSecret(sfile, pass, sf.protected); err != nil {
		return id, fmt.Errorf("%s: theirs: %w", sf.name, err)
	}
	if id.public, err = keys.ParsePublicKey(pfile); err != nil {
		return id, fmt.Errorf("%s: ours: %w", pf.name, err)
	}
	if id.theirPublic, err = theirParsePublic(pfile); err != nil {
		return id, fmt.Errorf("%s: theirs: %w", pf.name, err)
	}
	pk := sk.Public()
	switch {
	case id.secret != sk || id.theirSecret != sk:
		return id, fmt.Errorf("%s: secret key read back as %x (ours) and %x (theirs), want %x", id.name, id.secret[:], id.theirSecret[:], sk[:])
	case id.public != pk || id.theirPublic != pk:
		return id, fmt.Errorf("%s: public key read back as %x (ours) and %x (theirs), want %x", id.name, id.public[:], id.theirPublic[:], pk[:])
	}
	return id, nil
}

// slowUnderRace reports whether a secret key format runs bcrypt_pbkdf,
// which the race detector slows about 25 times (over 10 s a key) and in
// which it can find nothing: such cases are left out under -race, as in
// package keys, and run in the test run without it.
func slowUnderRace(name string) bool {
	return raceEnabled && strings.Contains(name, "bcrypt")
}

// pool returns one identity per secret key format, each with a public key
// file of a format taken in turn, made once per test binary (the KDFs are
// slow, the more so under the race detector) and two at a time.
var pool = sync.OnceValues(func() ([]identity, error) {
	ids := make([]identity, len(secretFormats))
	errs := make([]error, len(secretFormats))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, sf := range secretFormats {
		if slowUnderRace(sf.name) {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ids[i], errs[i] = makeIdentity(sf, publicFormats[i%len(publicFormats)])
		})
	}
	wg.Wait()
	ids = slices.DeleteFunc(ids, func(id identity) bool { return id.name == "" })
	return ids, errors.Join(errs...)
})

func mustPool(tb testing.TB) []identity {
	tb.Helper()
	ids, err := pool()
	if err != nil {
		tb.Fatal(err)
	}
	return ids
}

// pick returns n identities of the pool chosen by rng (possibly the same
// one twice: a recipient listed twice is allowed) and one that is not
// among them.
func pick(rng *rand.Rand, ids []identity, n int) (chosen []identity, outsider identity) {
	perm := rng.Perm(len(ids))
	for i := range n {
		chosen = append(chosen, ids[perm[i]])
	}
	if n > 1 && rng.IntN(4) == 0 {
		chosen[n-1] = chosen[0]
	}
	return chosen, ids[perm[len(perm)-1]]
}

// theirEditList is an edit list as the oracle's writer takes it; nil
// when has is false.
func theirEditList(el []uint64, has bool) *headers.DataEditListHeaderPacket {
	if !has {
		return nil
	}
	return &headers.DataEditListHeaderPacket{
		PacketType:    headers.PacketType{PacketType: headers.DataEditList},
		NumberLengths: uint32(len(el)),
		Lengths:       el,
	}
}

// theirEncrypt encrypts plain with the oracle's writer, for recipients,
// with writer's key (a fresh one when nil) and the given edit list,
// writing in chunks of the given size.
func theirEncrypt(plain []byte, writer *[32]byte, recipients [][32]byte, el *headers.DataEditListHeaderPacket, chunk int) (file []byte, err error) {
	defer recoverOracle(&err)
	var b bytes.Buffer
	var w *streaming.Crypt4GHWriter
	if writer != nil {
		w, err = streaming.NewCrypt4GHWriter(&b, *writer, recipients, el)
	} else {
		w, err = streaming.NewCrypt4GHWriterWithoutPrivateKey(&b, recipients, el)
	}
	if err != nil {
		return nil, err
	}
	for p := plain; len(p) > 0; {
		n := min(chunk, len(p))
		if _, err := w.Write(p[:n]); err != nil {
			return nil, err
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// theirDecrypt decrypts file with the oracle's streaming reader, through a
// seekable source or a plain io.Reader, reading chunk bytes at a time.
func theirDecrypt(file []byte, sk [32]byte, seekable bool, chunk int) (out []byte, err error) {
	defer recoverOracle(&err)
	var src io.Reader = bytes.NewReader(file)
	if !seekable {
		src = struct{ io.Reader }{src}
	}
	r, err := streaming.NewCrypt4GHReader(src, sk, nil)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, chunk)
	for {
		n, err := r.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if n == 0 {
			return out, errors.New("oracle reader returned 0 bytes and no error")
		}
	}
}

// readModes are the ways ourDecrypt reads a file.
const (
	modeWriteTo  = iota // io.Copy: Reader.WriteTo, the parallel engine
	modeRead            // Reader.Read in chunks
	modeReaderAt        // ReaderAt.ReadAt of the whole plaintext
	numModes
)

// ourDecrypt decrypts file with c4gh in the given mode.
func ourDecrypt(file []byte, sk *keys.SecretKey, opts *c4gh.DecryptOptions, mode, chunk int) ([]byte, error) {
	if mode == modeReaderAt {
		r, err := c4gh.NewReaderAt(bytes.NewReader(file), int64(len(file)), sk, opts)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		out := make([]byte, r.Size()+1)
		n, err := r.ReadAt(out, 0)
		if err == io.EOF {
			err = nil
		} else if err == nil {
			err = errors.New("ReadAt of Size()+1 bytes returned no error")
		}
		return out[:n], err
	}
	r, err := c4gh.NewReader(bytes.NewReader(file), sk, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out bytes.Buffer
	if mode == modeWriteTo {
		_, err = io.Copy(&out, r)
		return out.Bytes(), err
	}
	buf := make([]byte, chunk)
	for {
		n, err := r.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			return out.Bytes(), nil
		}
		if err != nil {
			return out.Bytes(), err
		}
	}
}

// chunkSizes are the read and write sizes the targets pick from.
var chunkSizes = []int{1, 7, 512, 65535, 65536, 65537, 1 << 20}

// pickChunk returns a chunk size; 1 only for small inputs, so that a
// fuzz iteration stays fast.
func pickChunk(rng *rand.Rand, n int) int {
	c := chunkSizes[rng.IntN(len(chunkSizes))]
	if c < 512 && n > 3*body.SegmentSize/2 {
		c = 4096 + rng.IntN(4096)
	}
	return c
}

// editListFrom decodes a fuzzed edit list: no bytes means no edit list;
// otherwise the first byte gives the count (0 to 7, so the empty list is
// included) and each length takes 3 bytes, scaled to the plaintext so
// that lists reach segment boundaries and sometimes past the end.
func editListFrom(b []byte, size int) ([]uint64, bool) {
	if len(b) == 0 {
		return nil, false
	}
	n := int(b[0] % 8)
	b = b[1:]
	el := make([]uint64, n)
	bound := uint64(size + size/4 + 2)
	for i := range el {
		var v [4]byte
		copy(v[:3], b)
		b = b[min(3, len(b)):]
		el[i] = uint64(binary.LittleEndian.Uint32(v[:])) % bound
	}
	return el, true
}

// encodeEditList is the inverse of editListFrom for lengths below 1<<24,
// to write seeds.
func encodeEditList(el ...uint64) []byte {
	b := []byte{byte(len(el))}
	for _, n := range el {
		b = append(b, byte(n), byte(n>>8), byte(n>>16))
	}
	return b
}

// model applies an edit list to plain the simple way, as the
// specification describes it: lengths alternate skip and keep, starting
// with a skip; after a final skip the rest is kept, after a final keep the
// rest is dropped; an empty list keeps everything. missing reports that the
// list keeps a byte past the end of plain, or keeps the rest after a skip
// that ends past it: what c4gh reports as ErrMissingData (lengths after
// the last kept byte do not count).
func model(plain []byte, el []uint64, has bool) (out []byte, missing bool) {
	if !has {
		return plain, false
	}
	out = []byte{}
	// need is how far the kept bytes reach; keepStart is where the run of
	// kept bytes that ends at pos started (keeps separated by empty skips
	// are one run), so that [0, 10, 0] keeps everything like [0].
	var pos, need, keepStart uint64
	size := uint64(len(plain))
	for i, n := range el {
		if i%2 == 1 && n > 0 {
			out = append(out, plain[min(pos, size):min(pos+n, size)]...)
			if need != pos {
				keepStart = pos
			}
			need = pos + n
		}
		pos += n
	}
	if len(el)%2 == 1 || len(el) == 0 {
		out = append(out, plain[min(pos, size):]...)
		if need == pos {
			need = keepStart // the rest continues the last run
		} else {
			need = pos
		}
	}
	return out, need > size
}

// checkOurs checks what our reader gave: want and no error, also when the
// edit list reaches past the body (missing), which the specification's
// ApplyEditList takes as it takes any other list; want and
// c4gh.ErrMissingData in strict mode.
func checkOurs(t *testing.T, what string, got []byte, err error, want []byte, missing bool) {
	t.Helper()
	checkOursStrict(t, what, got, err, want, missing, false)
}

func checkOursStrict(t *testing.T, what string, got []byte, err error, want []byte, missing, strict bool) {
	t.Helper()
	switch {
	case missing && strict && !errors.Is(err, c4gh.ErrMissingData):
		t.Fatalf("%s: error %v, want ErrMissingData (the edit list reaches past the body)", what, err)
	case !(missing && strict) && err != nil:
		t.Fatalf("%s: %v", what, err)
	case !bytes.Equal(got, want):
		t.Fatalf("%s: %d bytes differ from the %d expected (first difference at %d)", what, len(got), len(want), firstDiff(got, want))
	}
}

// theirEditListBug reports whether the oracle's reader may return bytes
// that an edit list skips (testdata/difftest/README.md, "edit lists that
// end at a segment end"): the list ends on a keep and its lengths add up
// to the end of a segment or of a body of plainLen bytes. The targets do
// not compare the oracle's output for such files; ours they still check.
func theirEditListBug(el []uint64, has bool, plainLen int) bool {
	if !has || len(el) == 0 || len(el)%2 == 1 {
		return false
	}
	var sum uint64
	for _, n := range el {
		sum += n
	}
	return sum > 0 && sum <= uint64(plainLen) && (sum == uint64(plainLen) || sum%body.SegmentSize == 0)
}

// theirEditListBugFile is theirEditListBug for a file that sk opens.
func theirEditListBugFile(t *testing.T, file []byte, sk *keys.SecretKey) bool {
	t.Helper()
	h, err := header.Parse(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	c, err := h.Decrypt(sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Zero()
	n, err := body.PlaintextSize(int64(len(file)) - h.Size())
	if err != nil {
		t.Fatal(err)
	}
	return theirEditListBug(c.EditList, c.HasEditList, int(n))
}

// checkTheirs checks what the oracle's reader gave: want and no error.
func checkTheirs(t *testing.T, what string, got []byte, err error, want []byte) {
	t.Helper()
	switch {
	case err != nil:
		t.Fatalf("%s: oracle: %v", what, err)
	case !bytes.Equal(got, want):
		t.Fatalf("%s: oracle: %d bytes differ from the %d expected (first difference at %d)", what, len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// publics returns the public keys of ids, as we read them and as the
// oracle read them.
func publics(ids []identity) (ours []keys.PublicKey, theirs [][32]byte) {
	for _, id := range ids {
		ours = append(ours, id.public)
		theirs = append(theirs, id.theirPublic)
	}
	return ours, theirs
}
