package cli

import (
	"bufio"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/c4gh-go/crypt4gh/c4gh"
	"github.com/c4gh-go/crypt4gh/htsget"
	"github.com/c4gh-go/crypt4gh/htsget/client"
	"github.com/c4gh-go/crypt4gh/internal/outfile"
	"github.com/c4gh-go/crypt4gh/internal/tlserr"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/c4gh-go/crypt4gh/region"
	"github.com/urfave/cli/v2"
)

// tokenEnv holds the bearer token of htsget, when --token-file is not
// given.
const tokenEnv = "HTSGET_TOKEN"

// htsgetOptions are the flags of htsget.
type htsgetOptions struct {
	keyOptions
	Output        string
	Force         bool
	Regions       cli.StringSlice
	Format        string
	Class         string
	KeepEncrypted bool
	NoEncryption  bool
	TokenFile     string
	Retries       int
	Quiet         bool
}

func htsgetCommand(e *env) command {
	o := &htsgetOptions{}
	return command{Command: &cli.Command{
		Name:      "htsget",
		Usage:     "fetch a file or regions of it from an htsget server, and decrypt it",
		ArgsUsage: "URL",
		Description: "Asks the htsget server at URL (an endpoint such as https://host/reads/ID, or a\n" +
			"ticket URL with its query) for a Crypt4GH ticket for the public key of --sk,\n" +
			"fetches the ticket's parts (a few at a time, in order, each tried again on\n" +
			"network errors and 5xx answers, cut-off parts resumed where they stopped),\n" +
			"decrypts them as one crypt4gh stream and writes the file to stdout (or -o).\n" +
			"One --region is sent as a GET, several as a POST. --keep-encrypted writes\n" +
			"the crypt4gh file instead (authenticated on the way); --no-encryption asks\n" +
			"for a plaintext ticket and needs no key. The bearer token of --token-file or\n" +
			"HTSGET_TOKEN goes to the server's own origin only, never to another host\n" +
			"that a ticket names. The server's errors are shown with their htsget code:\n" +
			"exit 2 for a bad request, 3 for 401 and 403, 1 when the network still\n" +
			"fails after the retries, 4 for a stream that is not crypt4gh or is damaged.",
		Flags: []cli.Flag{
			skFlag(&o.SK),
			&cli.StringSliceFlag{Name: "region", Aliases: []string{"r"}, Destination: &o.Regions,
				Usage: "only the records of `REGION` (chr20, chr20:1000-2000, {chr:x}:1-2, * for unplaced reads; repeatable)"},
			&cli.StringFlag{Name: "format", Destination: &o.Format,
				Usage: "ask for the file in `FORMAT`: BAM or CRAM (reads), VCF or BCF (variants); default: the server's"},
			&cli.StringFlag{Name: "class", Destination: &o.Class,
				Usage: "header: only the file's header (`CLASS`)"},
			outputFlag(&o.Output), forceFlag(&o.Force),
			&cli.BoolFlag{Name: "keep-encrypted", Destination: &o.KeepEncrypted,
				Usage: "write the crypt4gh file that the ticket makes, for the key of --sk, instead of its plaintext"},
			&cli.BoolFlag{Name: "no-encryption", Destination: &o.NoEncryption,
				Usage: "ask for a plaintext ticket (no key needed)"},
			&cli.StringFlag{Name: "token-file", Destination: &o.TokenFile,
				Usage: "send the bearer token on the first line of `PATH` (default: " + tokenEnv + ")"},
			&cli.IntFlag{Name: "retries", Value: client.DefaultAttempts - 1, Destination: &o.Retries,
				Usage: "try each request `N` more times after a network error or a 5xx or 429 answer"},
			passphraseFileFlag(&o.PassphraseFile), quietFlag(&o.Quiet, false),
		},
		Action: func(c *cli.Context) error { return htsgetAction(e.start(c, o.Quiet, nil), o) },
	}, page: page{
		env: []string{secretKeyEnv, passphraseEnv, tokenEnv},
		examples: []string{
			"crypt4gh htsget --sk alice.sec --region chr20:1-100000 -o chr20.bam https://htsget.example.org/reads/NA12878",
			"crypt4gh htsget --no-encryption -r chr1 -o chr1.vcf.gz http://127.0.0.1:8080/variants/cohort",
		},
	}}
}

func htsgetAction(e *env, o *htsgetOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) != 1 {
		return usagef("htsget needs one URL, got %s", plural(int64(len(e.args)), "argument"))
	}
	req, err := o.request()
	if err != nil {
		return err
	}
	token, err := readToken(e, o.TokenFile)
	if err != nil {
		return err
	}
	if token != "" && client.PlainHTTP(e.args[0]) {
		e.warnf("the token is sent over plain http to another machine: use https")
	}
	c := &client.Client{Token: token, Attempts: o.Retries + 1, UserAgent: "crypt4gh/" + version()}
	if err := outfile.Distinct(e.stdout, []string{"-o", o.Output}, keyInputs(o.keyOptions, "--token-file", o.TokenFile)); err != nil {
		return err
	}
	opts := outfile.Options{Mode: outfile.ModeSecret, Force: o.Force}
	if o.KeepEncrypted {
		opts = outfile.Options{Mode: outfile.ModePublic, Binary: true, Force: o.Force}
	}
	if objstore.IsURL(o.Output) {
		return usagef("-o %s: htsget writes files and stdout, not objects", o.Output)
	}
	out, err := outfile.Open(o.Output, e.stdout, opts)
	if err != nil {
		return err
	}
	if o.NoEncryption {
		err = htsgetPlain(e, c, req, out)
	} else {
		err = htsgetEncrypted(e, o, c, req, out)
	}
	if tlserr.Untrusted(err) {
		err = withHint(err, "the server's certificate is not trusted here: name its authority's certificate in SSL_CERT_FILE")
	}
	return out.Finish(err)
}

// request checks the flags and returns the ticket request they make.
func (o *htsgetOptions) request() (*htsget.Request, error) {
	switch {
	case o.KeepEncrypted && o.NoEncryption:
		return nil, usagef("--keep-encrypted and --no-encryption cannot be used together")
	case o.Retries < 0:
		return nil, usagef("--retries %d: give 0 or more", o.Retries)
	case o.Class != "" && o.Class != "header":
		return nil, usagef("--class %s: the only class is header", quoteName(o.Class))
	case o.Class != "" && len(o.Regions.Value()) > 0:
		return nil, usagef("--class header takes no --region")
	}
	format := strings.ToUpper(o.Format)
	if format != "" && !slices.Contains(slices.Concat(htsget.Formats(htsget.Reads), htsget.Formats(htsget.Variants)), format) {
		return nil, usagef("--format %s: give BAM, CRAM, VCF or BCF", quoteName(o.Format))
	}
	regions, err := region.ParseAll(o.Regions.Value())
	if err != nil {
		return nil, err
	}
	req := &htsget.Request{Format: format, Class: o.Class}
	for _, g := range regions {
		req.Regions = append(req.Regions, htsget.FromRegion(g))
	}
	if !o.NoEncryption {
		req.EncryptionScheme = "C4GH"
	}
	return req, nil
}

// htsgetPlain writes the parts of a plaintext ticket to out.
func htsgetPlain(e *env, c *client.Client, req *htsget.Request, out io.Writer) error {
	parts, err := openTicket(e, c, req)
	if err != nil {
		return err
	}
	defer parts.Close()
	_, err = io.Copy(out, parts)
	return err
}

// htsgetEncrypted asks for a ticket for the key of --sk, and writes its
// plaintext (or, with --keep-encrypted, the crypt4gh stream, each segment
// authenticated) to out.
func htsgetEncrypted(e *env, o *htsgetOptions, c *client.Client, req *htsget.Request, out io.Writer) error {
	sk, err := readReaderKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	pk, err := readerPublic(sk)
	if err != nil {
		return err
	}
	c.PublicKey = &pk
	parts, err := openTicket(e, c, req)
	if err != nil {
		return err
	}
	defer parts.Close()
	var src io.Reader = parts
	if o.KeepEncrypted {
		src = io.TeeReader(parts, out)
	}
	br := bufio.NewReaderSize(src, 64<<10)
	if err := c4gh.CheckMagic(br); err != nil {
		return ticketStreamError(err)
	}
	// A file kept as it is must hold nothing unauthenticated, also past
	// what its edit list keeps.
	r, err := c4gh.NewReader(br, sk, &c4gh.DecryptOptions{Whole: o.KeepEncrypted})
	if err != nil {
		return ticketStreamError(noPacketHint(err, sk, nil))
	}
	defer r.Close()
	dst := out
	if o.KeepEncrypted {
		dst = io.Discard
	}
	if _, err := r.WriteTo(dst); err != nil {
		return decryptError(err, r.HeaderSize(), -1)
	}
	if o.KeepEncrypted {
		// What comes after what the edit list keeps is part of the file.
		if _, err := io.Copy(io.Discard, br); err != nil {
			return err
		}
	}
	warnMissing(e, client.ShownURL(e.args[0]), r.Missing())
	return nil
}

// ticketStreamError says that a stream that is not crypt4gh came from a
// ticket.
func ticketStreamError(err error) error {
	if notCrypt4GH(err) {
		return withHint(err, "the ticket's parts do not make a crypt4gh stream; does the server support encryptionScheme=C4GH? (--no-encryption asks for plaintext)")
	}
	return err
}

// openTicket asks for the ticket of req at the command's URL and opens
// its parts.
func openTicket(e *env, c *client.Client, req *htsget.Request) (*client.Reader, error) {
	t, err := c.Ticket(e.ctx, e.args[0], req)
	if err != nil {
		return nil, err
	}
	return c.Open(e.ctx, t, e.args[0])
}

// readToken returns the bearer token of --token-file (its first line),
// or of HTSGET_TOKEN.
func readToken(e *env, path string) (string, error) {
	token, from, err := tokenOf(e, path)
	if err == nil && strings.ContainsFunc(token, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return "", usagef("the token of %s holds a space or a control character", from)
	}
	return token, err
}

func tokenOf(e *env, path string) (token, from string, err error) {
	if path == "" {
		return strings.TrimSpace(os.Getenv(tokenEnv)), tokenEnv, nil
	}
	token, err = readTokenFile(e, path)
	return token, "--token-file " + quoteName(path), err
}

// readTokenFile returns the first line of the file at path.
func readTokenFile(e *env, path string) (string, error) {
	f, err := os.Open(expandHome(path))
	if err != nil {
		return "", usagef("failed to read --token-file %s: %v", quoteName(path), pathErr(err))
	}
	defer f.Close()
	e.warnReadable("token file", expandHome(path))
	line, err := bufio.NewReader(io.LimitReader(f, 64<<10)).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", usagef("failed to read --token-file %s: %v", quoteName(path), pathErr(err))
	}
	token := strings.TrimSpace(line)
	if token == "" {
		return "", usagef("--token-file %s holds no token on its first line", quoteName(path))
	}
	return token, nil
}
