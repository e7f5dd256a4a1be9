package cli

import (
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/c4gh-go/crypt4gh/htsget/server"
	"github.com/c4gh-go/crypt4gh/objstore"
	"github.com/urfave/cli/v2"
)

// serveOptions are the flags of serve.
type serveOptions struct {
	keyOptions
	store      storeOptions
	Listen     string
	Plaintext  bool
	TokenFile  string
	TLSCert    string
	TLSKey     string
	BaseURL    string
	MaxStreams int
	Presign    bool
	Quiet      bool
}

func serveCommand(e *env) command {
	o := &serveOptions{}
	return command{Command: &cli.Command{
		Name:      "serve",
		Usage:     "answer htsget requests for regions of the crypt4gh files of a folder or a bucket",
		ArgsUsage: "SOURCE",
		Description: "Serves htsget 1.3 (/reads/ID and /variants/ID, GET and POST, and their\n" +
			"service-info) for the BAM, CRAM, VCF.gz and BCF files of SOURCE, a folder or\n" +
			"s3://BUCKET/PREFIX/, encrypted for --sk, with their index beside them. ID is\n" +
			"the path under SOURCE without .c4gh and the format's extension.\n" +
			"A request with encryptionScheme=C4GH and the requester's public key in the\n" +
			"Htsget-Context-Public-Key header (or the publicKey parameter) gets a ticket\n" +
			"whose parts make one crypt4gh file for that key (the server opens headers and\n" +
			"edge blocks only); with stream=true, those parts in one response, which\n" +
			"samtools reads through the htslib-crypt4gh plug-in. With\n" +
			"--plaintext, other requests get the decrypted region, as samtools and\n" +
			"bcftools read it. The data URLs of tickets are signed ranges of the\n" +
			"server's /data endpoint, valid for an hour, signed with a key derived from\n" +
			"--sk: instances with the same key serve each other's tickets. Without --sk,\n" +
			"inside crypt4gh agent, the agent's key serves (the agent opens and seals the\n" +
			"headers and derives the same URL key). Runs until Ctrl-C or SIGTERM, which let\n" +
			"the requests under way finish; a second one cuts them off.",
		Flags: append([]cli.Flag{
			skFlag(&o.SK),
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:8080", Destination: &o.Listen,
				Usage: "listen on `ADDR` (HOST:PORT; :PORT for every interface; default 127.0.0.1:8080, this machine only)"},
			&cli.BoolFlag{Name: "plaintext", Destination: &o.Plaintext,
				Usage: "also answer requests without encryptionScheme, with the decrypted data (for samtools, bcftools, IGV)"},
			&cli.StringFlag{Name: "token-file", Destination: &o.TokenFile,
				Usage: "accept only ticket requests with a bearer token listed in `PATH`, one a line"},
			&cli.StringFlag{Name: "tls-cert", Destination: &o.TLSCert, Usage: "serve HTTPS with the certificate chain at `PATH` (PEM)"},
			&cli.StringFlag{Name: "tls-key", Destination: &o.TLSKey, Usage: "the private key of --tls-cert at `PATH` (PEM)"},
			&cli.StringFlag{Name: "url", Destination: &o.BaseURL,
				Usage: "the `URL` clients reach the server at, for the data URLs of tickets (default: the scheme and Host of each request)"},
			&cli.BoolFlag{Name: "presign", Destination: &o.Presign,
				Usage: "with an s3:// SOURCE: give the stored ranges of Crypt4GH tickets as presigned GET URLs of the objects, which requesters must reach"},
			&cli.IntFlag{Name: "max-streams", Value: 64, Destination: &o.MaxStreams,
				Usage: "send at most `N` data responses at once; more wait their turn"},
			passphraseFileFlag(&o.PassphraseFile), quietFlag(&o.Quiet, false),
		}, o.store.flags()...),
		Action: func(c *cli.Context) error { return serveAction(e.start(c, o.Quiet, &o.store), o) },
	}, page: page{
		env: withAWS(secretKeyEnv, passphraseEnv),
		examples: []string{
			"crypt4gh serve --sk server.sec --plaintext /archive &",
			"samtools view -c 'http://127.0.0.1:8080/reads/NA12878?referenceName=chr20'",
			"crypt4gh serve --sk server.sec --listen :8443 --token-file tokens --tls-cert cert.pem --tls-key key.pem s3://archive/cohort/",
		},
	}}
}

func serveAction(e *env, o *serveOptions) error {
	if err := e.flagsFirst(); err != nil {
		return err
	}
	if len(e.args) != 1 {
		return usagef("serve needs SOURCE (a folder or s3://BUCKET/PREFIX/), got %s", plural(int64(len(e.args)), "argument"))
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if o.Presign && !objstore.IsURL(e.args[0]) {
		return usagef("--presign is for an s3:// SOURCE")
	}
	if o.MaxStreams < 1 {
		return usagef("--max-streams must be at least 1")
	}
	if o.BaseURL != "" && !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
		return usagef("--url %s is not an http:// or https:// URL", o.BaseURL)
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return usagef("--listen %s is not HOST:PORT: %v", o.Listen, err)
	}
	src, err := e.serveSource(e.args[0])
	if err != nil {
		return err
	}
	var tokens []string
	if o.TokenFile != "" {
		if tokens, err = readTokens(o.TokenFile); err != nil {
			return err
		}
		e.warnReadable("token file", o.TokenFile)
	}
	sk, err := readHolderKey(e, o.keyOptions)
	if err != nil {
		return err
	}
	defer sk.Zero()
	srv, err := server.New(server.Config{
		Source: src, Key: sk, Plaintext: o.Plaintext, Tokens: tokens, BaseURL: o.BaseURL,
		MaxStreams: o.MaxStreams, Presign: o.Presign, Log: log.New(e.stderr, "crypt4gh serve: ", log.LstdFlags|log.LUTC),
	})
	if err != nil {
		return err
	}
	if o.TLSCert != "" {
		// Before the start line: a server that cannot serve says so
		// first, as a missing input.
		if _, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey); err != nil {
			return usagef("--tls-cert %s, --tls-key %s: %v", quoteName(o.TLSCert), quoteName(o.TLSKey), pathErr(err))
		}
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("failed to listen on %s: %w", o.Listen, err)
	}
	defer ln.Close()

	// From here on the signals stop the server, which lets the requests
	// under way finish; the command then ends with 128 + the signal's
	// number, as every command does.
	stops := []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}
	ctx, caught, release := e.takeSignals(stops...)
	defer release()
	force, releaseForce := forceOnSecond(stops...)
	defer releaseForce()
	// The start line, -q or not: where the server listens matters.
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	what := "Crypt4GH tickets"
	if o.Plaintext {
		what += " and plaintext tickets"
	}
	where := "on loopback only (--listen HOST:PORT for others)"
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		where = "to the network"
		if o.Plaintext && o.TLSCert == "" {
			e.warnf("plaintext tickets over plain HTTP to the network: anyone on the way reads the data; give --tls-cert and --tls-key")
		}
	}
	fmt.Fprintf(e.stderr, "crypt4gh: serving %s of %s at %s://%s, %s\n", what, quoteName(e.args[0]), scheme, ln.Addr(), where)
	if err := srv.Serve(ctx, force, ln, o.TLSCert, o.TLSKey); err != nil {
		return err
	}
	sig, _ := caught()
	fmt.Fprintf(e.stderr, "crypt4gh: stopped serving (%v)\n", sig)
	return quietExit(128 + int(sig))
}

// forceOnSecond returns a context that is done when the second of sigs
// arrives: the first stops the server gently (takeSignals), the second
// cuts off what it still sends. release stops listening.
func forceOnSecond(sigs ...os.Signal) (force context.Context, release func()) {
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, sigs...)
	force, cancel := context.WithCancel(context.Background())
	quit := make(chan struct{})
	go func() {
		for range 2 {
			select {
			case <-ch:
			case <-quit:
				return
			}
		}
		cancel()
	}()
	return force, func() { signal.Stop(ch); close(quit); cancel() }
}

// serveSource opens SOURCE: a folder or an s3:// prefix.
func (e *env) serveSource(source string) (server.Source, error) {
	if !objstore.IsURL(source) {
		fi, err := os.Stat(source)
		if err != nil {
			return nil, usagef("%s: %v", quoteName(source), pathErr(err))
		}
		if !fi.IsDir() {
			return nil, usagef("%s is not a folder", quoteName(source))
		}
		return server.Dir(source)
	}
	loc, err := objstore.Parse(source)
	if err != nil {
		return nil, err
	}
	if loc.URL != "" || !loc.IsPrefix() {
		return nil, withHint(usagef("serve takes a folder or an s3:// prefix, not %s", loc), "end a prefix with /: s3://BUCKET/PREFIX/")
	}
	st, err := e.store(loc)
	if err != nil {
		return nil, err
	}
	// One listing, so that a wrong bucket or credentials fail now.
	for _, err := range st.ListDir(e.ctx, loc) {
		if err != nil {
			return nil, err
		}
		break
	}
	return server.Store(st, loc), nil
}

// readTokens reads the bearer tokens of --token-file.
func readTokens(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("failed to read --token-file %s: %v", quoteName(path), pathErr(err))
	}
	defer f.Close()
	tokens, err := server.ReadTokens(f)
	if err != nil {
		return nil, usagef("--token-file %s: %v", quoteName(path), err)
	}
	return tokens, nil
}
