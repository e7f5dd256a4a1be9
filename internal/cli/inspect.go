package cli

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/header"
	"github.com/c4gh-go/crypt4gh/internal/batch"
	"github.com/c4gh-go/crypt4gh/internal/describe"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/textfmt"
	"github.com/urfave/cli/v2"
)

// inspectOptions are the flags of inspect.
type inspectOptions struct {
	keyOptions // the first --sk; Sender is not used
	// SKs are all the --sk: each file is opened with the first of them
	// that opens it.
	SKs    cli.StringSlice
	store  storeOptions
	scale  scaleOptions
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
			"bytes made anew, and the segments read, without writing any data. With\n" +
			"--json too, that plan is one JSON object, its fields (stable):\n" +
			"  file                 the input path\n" +
			"  pieces               what the output holds, in order, one object each:\n" +
			"    kind                 copy (bytes of the plaintext) or new (an edge block\n" +
			"                         compressed again)\n" +
			"    start, end           the bytes copied, end excluded (null for new)\n" +
			"    length               bytes of the piece\n" +
			"  output_size          bytes that decrypt --region writes: copied_size +\n" +
			"                       new_size\n" +
			"  copied_size          bytes of the plaintext copied\n" +
			"  new_size             bytes made anew\n" +
			"  segments             indices of the stored segments read, increasing\n" +
			"  segment_count        how many they are\n" +
			"  segments_size        their bytes as stored\n" +
			"  body_size            bytes of the file's body\n" +
			"  splice_body_size     bytes of the body splice --region writes\n" +
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
		}, slices.Concat(o.region.flags(), o.store.flags(), o.scale.flags(false))...),
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
	if err := o.scale.check(len(e.args) > 0 || o.scale.batch()); err != nil {
		return err
	}
	one := func(path string) (bool, error) {
		shown, err := inspectOne(e, o, path, key)
		if err != nil && !shown {
			err = inspectFailed(e, o, path, err, key)
		}
		return shown, err
	}
	if len(e.args) == 0 && !o.scale.batch() {
		_, err := one(path)
		return err
	}
	if len(e.args) == 1 && !streamed(e.args, o.scale) && !o.scale.used() {
		_, err := one(e.args[0])
		return err
	}
	shard, err := batch.ParseShard(cmp.Or(o.scale.Shard, "0/1"))
	if err != nil {
		return err
	}
	// Several files: each is described, one after the other (with
	// --json, one object each), and a failure is reported and does not
	// stop the others, as verify does.
	var worst error
	failed, total, listed, printed := 0, 0, 0, false
	for s := range e.sources(e.args, o.scale, isC4gh) {
		listed++
		if !shard.Has(s.In) {
			continue
		}
		total++
		if s.Err != nil {
			if err := inspectFailed(e, o, s.In, s.Err, key); errors.Is(err, errWriteOutput) {
				return err
			}
			report(e.stderr, fmt.Errorf("%s: %w", quoteName(shownName(s.In)), s.Err))
			failed++
			if worst == nil || exitCode(s.Err) > exitCode(worst) {
				worst = s.Err
			}
			continue
		}
		if printed && !o.JSON {
			// A blank line after the description before.
			if _, err := io.WriteString(e.stdout, "\n"); err != nil {
				return fmt.Errorf("%w: %w", errWriteOutput, err)
			}
		}
		shown, err := one(s.In)
		printed = printed || shown
		if err == nil {
			continue
		}
		if errors.Is(err, errWriteOutput) || key.err != nil {
			return err // no use going on
		}
		failed++
		err = fmt.Errorf("%s: %w", quoteName(shownName(s.In)), err)
		report(e.stderr, errors.New(err.Error()))
		if worst == nil || exitCode(err) > exitCode(worst) {
			worst = err
		}
	}
	if listed == 0 {
		return usagef("nothing to inspect")
	}
	if failed > 0 {
		return &verifyFailed{failed: failed, total: total, worst: worst, what: "inspection"}
	}
	return nil
}

// errTerminalInput is inspect's answer to no input but a terminal.
var errTerminalInput = usagef("no input: stdin is a terminal")

// errWriteOutput marks a failure to write the description.
var errWriteOutput = errors.New("failed to write output")

// lazyKey is the secret keys of --sk, loaded (and their passphrases
// asked) once, when the first input is known to start like a crypt4gh
// file.
type lazyKey struct {
	k      keyOptions
	paths  []string // every --sk
	sks    []readerKey
	err    error
	loaded bool
}

func (k *lazyKey) get(e *env) ([]readerKey, error) {
	if !k.loaded {
		k.loaded = true
		if len(k.paths) == 0 {
			// No --sk: the agent, when there is one.
			c, err := agent.FromEnv()
			if c != nil {
				k.sks, k.paths = []readerKey{c}, []string{"the agent"}
			}
			k.err = err
			return k.sks, k.err
		}
		for _, p := range k.paths {
			ko := k.k
			ko.SK = p
			if ko.secretKeyPath() == "" {
				continue
			}
			sk, err := readReaderKey(e, ko)
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
func (k *lazyKey) opener(h *header.Header, sks []readerKey) (readerKey, string) {
	for i, sk := range sks {
		if opensWith(h, sk) {
			return sk, k.paths[i]
		}
	}
	return sks[0], ""
}

// opensWith reports whether sk opens the header h.
func opensWith(h *header.Header, sk readerKey) bool {
	contents, err := h.Decrypt(sk, nil)
	if err != nil {
		return false
	}
	contents.Zero()
	return true
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
		return false, withHint(errTerminalInput, "give the file: crypt4gh inspect FILE")
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
	r := describe.Describe(h, bodySize)
	r.File = shownName(path)
	if r.File == "" {
		r.File = "-"
	}
	var keyErr error
	if len(h.Packets) == 0 {
		keyErr = header.ErrNoPackets // no key opens it: damaged, with a key or without
	}
	if len(sks) > 0 {
		sk, by := key.opener(h, sks)
		keyErr = noPacketHint(r.Open(h, sk), sk, nil)
		if len(sks) > 1 {
			if by == "" {
				keyErr = withHint(fmt.Errorf("%w: none of the %d keys of --sk opens it", header.ErrNoDecryptablePacket, len(sks)),
					"the file is for other keys; inspect without --sk shows the writers of its packets")
			} else {
				r.OpenedBy = &by
			}
		}
	}
	failure := cmp.Or(keyErr, r.BodyErr)
	if failure != nil {
		msg := failure.Error()
		r.Error, r.Exit = &msg, exitCode(failure)
	}
	if err := r.Print(e.stdout, o.JSON); err != nil {
		return false, fmt.Errorf("%w: %w", errWriteOutput, err)
	}
	if keyErr == nil {
		warnMissing(e, path, r.Missing()) // valid, as decrypt takes it, but worth a warning
	}
	return true, failure
}

// inspectFailed prints, with --json, the object of a file at path that
// failed with err before it could be described, so that a script reading
// the objects learns of every file; it returns err.
func inspectFailed(e *env, o *inspectOptions, path string, err error, key *lazyKey) error {
	if !o.JSON || errors.Is(err, errWriteOutput) || key.err != nil || errors.Is(err, errTerminalInput) {
		return err
	}
	name := cmp.Or(shownName(path), "-")
	f := &describe.Failure{File: name, Error: err.Error(), Exit: exitCode(err)}
	if werr := f.Print(e.stdout); werr != nil {
		return fmt.Errorf("%w: %w", errWriteOutput, werr)
	}
	return err
}

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

// inspectRegion prints what the regions of the file at path cost (see
// regionReport), without writing any data.
func inspectRegion(e *env, o *inspectOptions, path string) error {
	if o.secretKeyPath() == "" {
		return withHint(usagef("--region needs the key that opens the file"), "add --sk KEY")
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
	sk, err := readReaderKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	rp, err := e.planRegions(&o.region, inputPathOrStdin(path), file, size, sk, &c4gh.DecryptOptions{})
	if err != nil {
		return err
	}
	defer rp.plain.Close()
	name := shownName(inputPathOrStdin(path))
	r, err := regionReport(name, rp, size-rp.plain.HeaderSize())
	if err != nil {
		return err
	}
	return r.Print(e.stdout, o.JSON)
}

// plural is n and unit, in the plural unless n is 1.
func plural(n int64, unit string) string { return textfmt.Plural(n, unit) }
