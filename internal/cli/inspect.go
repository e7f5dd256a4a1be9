package cli

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/c4gh-go/crypt4gh/body"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/edit"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/keys"
	"github.com/urfave/cli/v2"
)

// inspectOptions are the flags of inspect.
type inspectOptions struct {
	keyOptions // the first --sk; Sender is not used
	// SKs are all the --sk: each file is opened with the first of them
	// that opens it.
	SKs    cli.StringSlice
	store  storeOptions
	region regionOptions
	Input  string
	JSON   bool
	Quiet  bool
}

func inspectCommand(e *env) command {
	o := &inspectOptions{}
	return command{Command: &cli.Command{
		Name:      "inspect",
		Usage:     "describe a file's header and body without decrypting the body",
		ArgsUsage: "[FILE…]",
		Description: "Reads a crypt4gh file (FILE, -i PATH or stdin) and prints its layout: version,\n" +
			"header size, each header packet (length, encryption method, writer public\n" +
			"key), body size, segment count, and the plaintext size that the body holds\n" +
			"before any edit list. Without a key nobody can tell whether an edit list\n" +
			"exists. With --sk it also prints which packets the key opens and what they\n" +
			"hold (data keys are counted, never printed), the edit list, and the\n" +
			"plaintext size that the file stands for after its edit list. The body is\n" +
			"never decrypted; on a pipe it is read to count its bytes. Given several\n" +
			"FILEs (or a prefix, s3://BUCKET/PREFIX/, for the .c4gh objects under it),\n" +
			"each is described in turn, the key read once; a failure is reported and\n" +
			"does not stop the others.\n" +
			"\n" +
			"With --region (and --sk), prints instead what decrypt --region and splice\n" +
			"--region would read of the file: the ranges of its plaintext copied, the\n" +
			"bytes made anew, and the segments read, without writing any data.\n" +
			"\n" +
			"With --json the same facts are printed as one JSON object a file. Fields\n" +
			"(stable; null when unknown, or when they need --sk and none was given):\n" +
			"  file                 the input path, \"-\" for stdin\n" +
			"  version              format version (always 1)\n" +
			"  header_size          bytes of the header, where the body starts\n" +
			"  packet_count         number of header packets\n" +
			"  packets              one object per packet, in file order:\n" +
			"    index                position in the header, from 0\n" +
			"    length               bytes of the packet, its length field included\n" +
			"    method               packet encryption method number\n" +
			"    method_name          X25519_chacha20_ietf_poly1305 for 0, unknown otherwise\n" +
			"    writer_public_key    base64 X25519 key of the writer (method 0), else null\n" +
			"    writer_public_key_hex  the same in hex\n" +
			"    opened               whether --sk opens the packet\n" +
			"    type                 data_key, edit_list or unknown (opened packets)\n" +
			"    type_code            the packet type number (opened packets)\n" +
			"  body_size            bytes after the header\n" +
			"  segment_count        encrypted segments in the body (a partial one counts)\n" +
			"  body_plaintext_size  plaintext bytes the body holds, before any edit list;\n" +
			"                       null when the body ends inside a segment\n" +
			"  reader_public_key    base64 public key of --sk, as in key files\n" +
			"  reader_public_key_hex  the same in hex\n" +
			"  opened_packets       indices of the packets --sk opens\n" +
			"  data_key_count       distinct data keys in those packets\n" +
			"  has_edit_list        whether an edit list opened\n" +
			"  edit_list            its lengths: skip, keep, skip, … (null when none)\n" +
			"  edit_list_fits       whether the edit list stays within body_plaintext_size\n" +
			"  plaintext_size       bytes the file stands for, after its edit list\n" +
			"  opened_by            with several --sk, the one that opens it (else null)\n" +
			"\n" +
			"Exit status 4 (after the description is printed) when the body ends inside a\n" +
			"segment; 3 when --sk opens no packet or the packets it opens are unusable.",
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{
				Name:        "sk",
				Usage:       "your secret key `PATH` (crypt4gh, OpenSSH ed25519 or PKCS#8 X25519); repeatable: each file is opened with the first that opens it",
				EnvVars:     []string{secretKeyEnv},
				Destination: &o.SKs,
			},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON object (its fields are listed above)", Destination: &o.JSON},
			passphraseFileFlag(&o.PassphraseFile), inputFlag(&o.Input), quietFlag(&o.Quiet, false),
		}, slices.Concat(o.region.flags(), o.store.flags())...),
		Action: func(c *cli.Context) error {
			if sks := o.SKs.Value(); len(sks) > 0 {
				o.SK = sks[0]
			}
			return inspect(e.start(c, o.Quiet, &o.store), o)
		},
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh inspect reads.bam.c4gh", "crypt4gh inspect --sk bob.sec --json reads.bam.c4gh",
			"crypt4gh inspect --sk bob.sec --region chr20:1-100000 reads.bam.c4gh",
		},
	}}
}

// Packet type names in the output of inspect.
const (
	typeDataKey  = "data_key"
	typeEditList = "edit_list"
	typeUnknown  = "unknown"
)

// methodName names the header packet encryption methods, as the
// specification does.
func methodName(m uint32) string {
	if m == header.MethodX25519ChaCha20Poly1305 {
		return "X25519_chacha20_ietf_poly1305"
	}
	return "unknown"
}

// inspectReport is what inspect finds out. It is printed as is with --json:
// the field names are documented in docs/commands.md and in the command's
// description, so keep them stable.
type inspectReport struct {
	File               string         `json:"file"`
	Version            uint32         `json:"version"`
	HeaderSize         int64          `json:"header_size"`
	PacketCount        int            `json:"packet_count"`
	Packets            []packetReport `json:"packets"`
	BodySize           int64          `json:"body_size"`
	SegmentCount       int64          `json:"segment_count"`
	BodyPlaintextSize  *int64         `json:"body_plaintext_size"`
	ReaderPublicKey    *string        `json:"reader_public_key"`
	ReaderPublicKeyHex *string        `json:"reader_public_key_hex"`
	OpenedPackets      []int          `json:"opened_packets"`
	DataKeyCount       *int           `json:"data_key_count"`
	HasEditList        *bool          `json:"has_edit_list"`
	EditList           []uint64       `json:"edit_list"`
	EditListFits       *bool          `json:"edit_list_fits"`
	PlaintextSize      *int64         `json:"plaintext_size"`
	OpenedBy           *string        `json:"opened_by"`

	// bodyErr says why BodyPlaintextSize is unknown.
	bodyErr error
}

type packetReport struct {
	Index              int     `json:"index"`
	Length             int64   `json:"length"`
	Method             uint32  `json:"method"`
	MethodName         string  `json:"method_name"`
	WriterPublicKey    *string `json:"writer_public_key"`
	WriterPublicKeyHex *string `json:"writer_public_key_hex"`
	Opened             *bool   `json:"opened"`
	Type               *string `json:"type"`
	TypeCode           *uint32 `json:"type_code"`
}

func inspect(e *env, o *inspectOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	path := o.Input
	if len(e.args) > 0 && path != "" {
		return usagef("give the input once: as FILE arguments or with -i, not both")
	}
	if err := o.region.check(); err != nil {
		return err
	}
	if o.region.given() {
		if len(e.args) > 1 {
			return usagef("--region describes one file: got %s", plural(int64(len(e.args)), "argument"))
		}
		if len(e.args) == 1 {
			path = e.args[0]
		}
		return inspectRegion(e, o, path)
	}
	key := &lazyKey{k: o.keyOptions, paths: o.SKs.Value()}
	defer key.zero()
	if len(e.args) == 0 {
		_, err := inspectOne(e, o, path, key)
		return err
	}
	paths, skipped, err := verifySources(e, e.args)
	if err != nil {
		return err
	}
	if len(paths) == 1 && skipped == 0 {
		_, err := inspectOne(e, o, paths[0], key)
		return err
	}
	// Several files: each is described, one after the other (with
	// --json, one object each), and a failure is reported and does not
	// stop the others, as verify does.
	var worst error
	failed, printed := 0, false
	if skipped > 0 {
		failed, worst = skipped, errSkipped
	}
	for _, p := range paths {
		if printed && !o.JSON {
			// A blank line after the description before.
			if _, err := io.WriteString(e.stdout, "\n"); err != nil {
				return fmt.Errorf("%w: %w", errWriteOutput, err)
			}
		}
		shown, err := inspectOne(e, o, p, key)
		printed = printed || shown
		if err == nil {
			continue
		}
		if errors.Is(err, errWriteOutput) || key.err != nil {
			return err // no use going on
		}
		failed++
		err = fmt.Errorf("%s: %w", quoteName(shownName(p)), err)
		report(e.stderr, errors.New(err.Error()))
		if worst == nil || exitCode(err) > exitCode(worst) {
			worst = err
		}
	}
	if failed > 0 {
		return &verifyFailed{failed: failed, total: len(paths) + skipped, worst: worst, what: "inspection"}
	}
	return nil
}

// errWriteOutput marks a failure to write the description.
var errWriteOutput = errors.New("failed to write output")

// lazyKey is the secret keys of --sk, loaded (and their passphrases
// asked) once, when the first input is known to start like a crypt4gh
// file.
type lazyKey struct {
	k      keyOptions
	paths  []string // every --sk
	sks    []*keys.SecretKey
	err    error
	loaded bool
}

func (k *lazyKey) get(e *env) ([]*keys.SecretKey, error) {
	if !k.loaded {
		k.loaded = true
		for _, p := range k.paths {
			ko := k.k
			ko.SK = p
			if ko.secretKeyPath() == "" {
				continue
			}
			sk, err := readSecretKey(e, ko)
			if err != nil {
				k.err = err
				break
			}
			k.sks = append(k.sks, sk)
		}
	}
	return k.sks, k.err
}

func (k *lazyKey) zero() {
	for _, sk := range k.sks {
		sk.Zero()
	}
}

// opener returns which of sks opens h (the first that does), and its
// --sk path; the first when none does, whose error tells why.
func (k *lazyKey) opener(h *header.Header, sks []*keys.SecretKey) (*keys.SecretKey, string) {
	for i, sk := range sks {
		if opensWith(h, sk) {
			return sk, k.paths[i]
		}
	}
	return sks[0], ""
}

// inspectOne describes the file at path ("" for stdin), and says whether
// it printed a description.
func inspectOne(e *env, o *inspectOptions, path string, key *lazyKey) (bool, error) {
	in, err := e.openSource(path)
	if err != nil {
		return false, err
	}
	defer in.Close()
	if (path == "" || path == "-") && outfile.IsTerminal(in.file) {
		return false, withHint(usagef("no input: stdin is a terminal"), "give the file: crypt4gh inspect FILE")
	}
	h, err := header.Parse(in)
	if err != nil {
		return false, err
	}
	bodySize, err := bodyLength(in)
	if err != nil {
		return false, err
	}
	sks, err := key.get(e)
	if err != nil {
		return false, err
	}
	r := describe(h, bodySize)
	r.File = shownName(path)
	if r.File == "" {
		r.File = "-"
	}
	var keyErr error
	if len(sks) > 0 {
		sk, by := key.opener(h, sks)
		keyErr = r.open(h, sk)
		if len(sks) > 1 {
			if by == "" {
				keyErr = withHint(fmt.Errorf("%w: none of the %d keys of --sk opens it", header.ErrNoDecryptablePacket, len(sks)),
					"the file is for other keys; inspect without --sk shows the writers of its packets")
			} else {
				r.OpenedBy = &by
			}
		}
	}
	if err := r.print(e.stdout, o.JSON); err != nil {
		return false, fmt.Errorf("%w: %w", errWriteOutput, err)
	}
	if keyErr != nil {
		return true, keyErr
	}
	warnMissing(e, path, r.missing()) // valid, as decrypt takes it, but worth a warning
	return true, r.bodyErr
}

// missing reports that the edit list describes more than the body holds.
func (r *inspectReport) missing() bool { return r.EditListFits != nil && !*r.EditListFits }

// bodyLength returns the number of bytes left in in: from the file size when
// in is a regular file, else by reading them.
func bodyLength(in *input) (int64, error) {
	if n := in.size(); n >= 0 {
		return n, nil
	}
	n, err := io.Copy(io.Discard, in)
	if err != nil {
		return 0, fmt.Errorf("failed to read body: %w", err)
	}
	return n, nil
}

// describe reports what the header and the body size tell without a key.
func describe(h *header.Header, bodySize int64) *inspectReport {
	r := &inspectReport{
		Version:      header.Version,
		HeaderSize:   h.Size(),
		PacketCount:  len(h.Packets),
		Packets:      make([]packetReport, len(h.Packets)),
		BodySize:     bodySize,
		SegmentCount: body.StoredSegments(bodySize),
	}
	for i := range h.Packets {
		p := &h.Packets[i]
		pr := packetReport{Index: i, Length: p.Size(), Method: p.Method, MethodName: methodName(p.Method)}
		if p.Method == header.MethodX25519ChaCha20Poly1305 {
			pr.WriterPublicKey, pr.WriterPublicKeyHex = keyStrings(keys.PublicKey(p.WriterPublicKey))
		}
		r.Packets[i] = pr
	}
	if n, err := body.PlaintextSize(bodySize); err == nil {
		r.BodyPlaintextSize = &n
	} else {
		var se *body.SegmentError
		if errors.As(err, &se) {
			err = fmt.Errorf("body %w: it ends inside segment %d, %d bytes into it (an encrypted segment has at least %d)",
				se.Err, se.Index, body.StoredLength(bodySize, se.Index), body.Overhead)
		}
		r.bodyErr = err
	}
	return r
}

// open adds what sk opens to r. It returns the error of header.Decrypt,
// if any: then only the packets are described.
func (r *inspectReport) open(h *header.Header, sk *keys.SecretKey) error {
	pk := sk.Public()
	r.ReaderPublicKey, r.ReaderPublicKeyHex = keyStrings(pk)
	r.OpenedPackets = []int{}
	contents, err := h.Decrypt(sk, nil)
	if err != nil && !errors.Is(err, header.ErrNoDecryptablePacket) {
		return noPacketHint(err, sk, nil)
	}
	for i := range r.Packets {
		opened := false
		r.Packets[i].Opened = &opened
	}
	if err != nil {
		return noPacketHint(err, sk, nil)
	}
	defer contents.Zero()
	for k, i := range contents.Opened {
		opened, code := true, contents.Types[k]
		name := typeUnknown
		switch code {
		case header.PacketTypeDataKey:
			name = typeDataKey
		case header.PacketTypeEditList:
			name = typeEditList
		}
		r.Packets[i].Opened, r.Packets[i].TypeCode, r.Packets[i].Type = &opened, &code, &name
		r.OpenedPackets = append(r.OpenedPackets, i)
	}
	n := len(contents.DataKeys)
	r.DataKeyCount = &n
	has := contents.HasEditList
	r.HasEditList = &has
	if has {
		r.EditList = append([]uint64{}, contents.EditList...)
	}
	if r.BodyPlaintextSize != nil {
		stands := edit.StandsFor(r.EditList, *r.BodyPlaintextSize) // nil without a list
		fits := !stands.Missing
		r.PlaintextSize = &stands.Size
		if has {
			r.EditListFits = &fits
		}
	}
	return nil
}

func (r *inspectReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(label, format string, args ...any) {
		fmt.Fprintf(tw, "%s:\t%s\n", label, fmt.Sprintf(format, args...))
	}
	name := r.File
	if name == "-" {
		name = "stdin"
	}
	line("file", "%s", quoteName(name))
	line("version", "%d", r.Version)
	line("header", "%s, %s", bytesText(r.HeaderSize), plural(int64(r.PacketCount), "packet"))
	for _, p := range r.Packets {
		desc := fmt.Sprintf("%s, method %d (%s)", bytesText(p.Length), p.Method, p.MethodName)
		switch {
		case p.Opened == nil:
		case !*p.Opened:
			desc += ", not opened by this key"
		case *p.Type == typeUnknown:
			desc += fmt.Sprintf(", opened: unknown packet type %d", *p.TypeCode)
		default:
			desc += ", opened: " + strings.ReplaceAll(*p.Type, "_", " ")
		}
		line(fmt.Sprintf("  packet %d", p.Index), "%s", desc)
		if p.WriterPublicKey != nil {
			line("    writer key", "%s", *p.WriterPublicKey)
		}
	}
	line("body", "%s, %s", bytesText(r.BodySize), plural(r.SegmentCount, "segment"))
	if r.OpenedBy != nil {
		line("opened by", "%s", *r.OpenedBy)
	}
	if r.ReaderPublicKey != nil {
		line("reader key", "%s (public key of --sk)", *r.ReaderPublicKey)
		if len(r.OpenedPackets) == 0 {
			line("opened packets", "none")
		} else {
			idx := make([]string, len(r.OpenedPackets))
			for i, n := range r.OpenedPackets {
				idx[i] = strconv.Itoa(n)
			}
			line("opened packets", "%s", strings.Join(idx, ", "))
		}
		if r.DataKeyCount != nil {
			line("data keys", "%d", *r.DataKeyCount)
		}
		if r.HasEditList != nil {
			line("edit list", "%s", editListText(r.EditList, *r.HasEditList))
		}
	}
	switch {
	case r.BodyPlaintextSize == nil:
		line("plaintext size", "unknown: %v", r.bodyErr)
	case r.PlaintextSize == nil:
		line("plaintext size", "%s before any edit list (only a key that opens the header shows whether one applies)",
			bytesText(*r.BodyPlaintextSize))
	case r.missing():
		line("plaintext size", "%s after the edit list (%s before), which describes more than the body holds",
			bytesText(*r.PlaintextSize), bytesText(*r.BodyPlaintextSize))
	case r.HasEditList != nil && *r.HasEditList:
		line("plaintext size", "%s after the edit list (%s before)",
			bytesText(*r.PlaintextSize), bytesText(*r.BodyPlaintextSize))
	default:
		line("plaintext size", "%s (no edit list)", bytesText(*r.PlaintextSize))
	}
	return tw.Flush()
}

// editListHumanMax is how many lengths of an edit list the human output
// shows; --json shows them all.
const editListHumanMax = 32

func editListText(list []uint64, has bool) string {
	if !has {
		return "none"
	}
	if len(list) == 0 {
		return "empty (keeps everything)"
	}
	var parts []string
	for i, n := range list[:min(len(list), editListHumanMax)] {
		verb := "skip"
		if i%2 == 1 {
			verb = "keep"
		}
		parts = append(parts, fmt.Sprintf("%s %d", verb, n))
	}
	s := strings.Join(parts, ", ")
	if len(list)%2 == 1 && len(list) <= editListHumanMax {
		s += ", keep the rest"
	}
	if len(list) > editListHumanMax {
		s += fmt.Sprintf(", … (%d lengths in all; --json lists them)", len(list))
	}
	return s
}

func bytesText(n int64) string { return plural(n, "byte") }

func plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// keyStrings returns pk in base64, as key files and the text show it, and
// in hex.
func keyStrings(pk keys.PublicKey) (b64, hexKey *string) {
	b, h := pk.String(), hex.EncodeToString(pk[:])
	return &b, &h
}

// inspectRegion prints what the regions of the file at path cost (see
// printRegionPlan), without writing any data.
func inspectRegion(e *env, o *inspectOptions, path string) error {
	if o.secretKeyPath() == "" {
		return withHint(usagef("--region needs the key that opens the file"), "add --sk KEY")
	}
	if o.JSON {
		return usagef("--json cannot be used with --region")
	}
	in, err := e.openSource(path)
	if err != nil {
		return err
	}
	defer in.Close()
	file, size, err := randomRegionInput(in)
	if err != nil {
		return err
	}
	sk, err := readSecretKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	rp, err := e.planRegions(&o.region, inputPathOrStdin(path), file, size, sk, &c4gh.DecryptOptions{})
	if err != nil {
		return err
	}
	defer rp.plain.Close()
	return printRegionPlan(e.stdout, inputName(path), rp, size-rp.plain.HeaderSize())
}
