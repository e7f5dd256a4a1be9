package cli

import (
	"io"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/internal/clidoc"
)

// The help pages, the manual page and the completion are made from the
// same text: each command's Usage, Description and flags, and the
// environment and examples below. Pages are laid out for an 80-column
// terminal.

// helpWidth is the width every help page fits in.
const helpWidth = 80

func init() {
	// urfave/cli calls this for --help, -h and "crypt4gh help [COMMAND]".
	// It is set once: it holds no state of a run.
	cli.HelpPrinter = func(w io.Writer, _ string, data any) {
		switch d := data.(type) {
		case *cli.Command:
			io.WriteString(w, doc().CommandPage(d))
		case *cli.App:
			io.WriteString(w, doc().AppPage(d))
		}
	}
}

// doc is what the pages say besides what the commands hold.
func doc() *clidoc.Doc {
	return &clidoc.Doc{
		Program: "crypt4gh", Width: helpWidth, Env: envDoc, Exit: exitCodes,
		Page: func(name string) ([]string, []string) { p := pages()[name]; return p.env, p.examples },
		Intro: "Encrypt and decrypt files in the GA4GH Crypt4GH format, for named recipients: keys, encryption, decryption, " +
			"new recipients and ranges without touching the encrypted data.",
		Examples: []string{
			"crypt4gh keygen --sk alice.sec --pk alice.pub",
			"crypt4gh encrypt --recipient_pk bob.pub -i reads.bam -o reads.bam.c4gh",
			"crypt4gh decrypt --sk bob.sec -i reads.bam.c4gh -o reads.bam",
		},
		HelpUsage: helpUsage, Date: manDate(), Version: version(),
		ManDescription: manDescription, Files: manFiles,
		SeeAlso:    "The GA4GH Crypt4GH specification: https://samtools.github.io/hts-specs/crypt4gh.pdf",
		BlockWidth: manBlockWidth, ExampleWidth: manExampleWidth,
		FlagValues: flagValues,
	}
}

// helpUsage describes the help command that urfave/cli adds.
const helpUsage = "show the commands, or the help page of one"

// envDoc says what each variable is for.
var envDoc = []clidoc.Entry{
	{Name: secretKeyEnv, Doc: "your secret key, when --sk is not given (keygen: where to write it)"},
	{Name: publicKeyEnv, Doc: "keygen: where to write the public key, when --pk is not given"},
	{Name: passphraseEnv, Doc: "the passphrase of the secret key (keygen: of the new key); a warning says that other processes can read it (keygen: that the new key is locked with it)"},
	{Name: newPassphraseEnv, Doc: "keygen --convert and --relock: the passphrase of the new key"},
	{Name: tokenEnv, Doc: "htsget: the bearer token, when --token-file is not given"},
	{Name: agent.SocketEnv, Doc: "the socket of the key agent (crypt4gh agent): a command given no --sk, nor C4GH_SECRET_KEY, opens header packets through it"},
	{Name: agent.PKEnv, Doc: "the key agent's public key, set with CRYPT4GH_AGENT"},
	{Name: agent.SecretEnv, Doc: "inside crypt4gh agent: the one of its keys to use (its path as given to --sk, its file name, or its public key); unset, any of them opens packets and the first seals"},
	{Name: "C4GH_LOG", Doc: "accepted for the reference tool's logging configuration; not read (messages go to stderr)"},
	{Name: "AWS_ENDPOINT_URL_S3", Doc: "s3:// paths: the S3 endpoint of a store that is not AWS (http://127.0.0.1:7070, https://s3.example.org), path-style; or --s3-config"},
	{Name: "AWS_ACCESS_KEY_ID", Doc: "s3:// paths: the access key, with AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); else ~/.aws/credentials and the rest of the AWS chain"},
	{Name: "AWS_PROFILE", Doc: "s3:// paths: the profile of ~/.aws/config and ~/.aws/credentials to use"},
	{Name: "AWS_REGION", Doc: "s3:// paths: the region (default us-east-1 for an endpoint of AWS_ENDPOINT_URL_S3)"},
	{Name: "AWS_SHARED_CREDENTIALS_FILE", Doc: "s3:// paths: another file for ~/.aws/credentials (AWS_CONFIG_FILE for ~/.aws/config)"},
	{Name: "AWS_CA_BUNDLE", Doc: "s3:// paths: a file of PEM certificates, the authorities of an endpoint whose certificate the system does not trust (ca_bundle in a profile; ca_certs_file in an s3cmd file)"},
}

// awsEnv are the variables of the commands that read or write objects.
var awsEnv = []string{"AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID", "AWS_PROFILE", "AWS_REGION", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CA_BUNDLE"}

// withAWS is the variables env of a command that takes s3:// paths.
func withAWS(env ...string) []string { return append(env, awsEnv...) }

// command is a command of the app with the parts of its pages that
// urfave/cli has no field for, declared beside its flags.
type command struct {
	*cli.Command
	page
}

// page is what a command's help and manual pages show besides its
// flags.
type page struct {
	env      []string // variables the command reads
	examples []string
}

// registry is the commands of the app, in the order of the help, each
// with its name, so that a run can build only the command it runs: the
// flags and pages of all of them cost a start-up about 40 page faults,
// 5 % of it (the test keeps each name that of its command).
func registry() []registered {
	return []registered{
		{"keygen", keygenCommand, false}, {"pubkey", pubkeyCommand, false}, {"encrypt", encryptCommand, false},
		{"decrypt", decryptCommand, false}, {"cat", catCommand, false}, {"reencrypt", reencryptCommand, false},
		{"rearrange", rearrangeCommand, false}, {"splice", spliceCommand, false}, {"inspect", inspectCommand, false},
		{"verify", verifyCommand, false}, {"ls", lsCommand, false}, {"cleanup", cleanupCommand, false},
		{"cp", cpCommand, false}, {"htsget", htsgetCommand, false}, {"mount", mountCommand, false},
		{"serve", serveCommand, false}, {"agent", agentCommand, false}, {"completion", completionCommand, true}, {"man", manCommand, true},
	}
}

// registered is a command of the registry.
type registered struct {
	name  string
	build func(*env) command
	whole bool // it reads the whole app: the man page, the completion scripts
}

// commands are the commands of the app of a run with the environment e,
// in the order of the help.
func commands(e *env) []command {
	reg := registry()
	all := make([]command, len(reg))
	for i, r := range reg {
		all[i] = r.build(e)
	}
	return all
}

// commandsFor are the commands a run of args needs: the one args names
// (a run, its help, the completion of its flags) or, for anything else
// (the help of the app, an unknown or misspelt name, completion of the
// command name, the commands that read the whole app), all of them; none
// for --version.
func commandsFor(e *env, args []string) []command {
	if len(args) == 2 && (args[1] == "--version" || args[1] == "-v") {
		return nil
	}
	if len(args) > 1 {
		for _, r := range registry() {
			if r.name == args[1] && !r.whole {
				return []command{r.build(e)}
			}
		}
	}
	return commands(e)
}

// pages are the pages of the commands, by name, for the help printer,
// which urfave/cli gives only the *cli.Command.
func pages() map[string]page {
	pagesOnce.Do(func() {
		pagesByName = map[string]page{}
		for _, c := range commands(newEnv(nil, nil, nil)) {
			pagesByName[c.Name] = c.page
		}
	})
	return pagesByName
}

// pagesOnce makes pagesByName, a cache of what the commands declare.
var (
	pagesOnce   sync.Once
	pagesByName map[string]page
)

// exitCodes are the table of docs/exit-codes.md, in short.
var exitCodes = []clidoc.ExitCode{
	{Code: exitOK, Doc: "success"},
	{Code: exitError, Doc: "I/O and other errors"},
	{Code: exitUsage, Doc: "usage: bad flags, arguments or ranges, an existing output"},
	{Code: exitKey, Doc: "keys: wrong passphrase, unreadable key, no packet for the key"},
	{Code: exitData, Doc: "data: not crypt4gh, corrupt, truncated or tampered"},
}

// usageLine is the synopsis of a command.
func usageLine(cmd *cli.Command) string {
	if cmd.UsageText != "" {
		return cmd.UsageText
	}
	line := "crypt4gh " + cmd.Name + " [flags]"
	if cmd.ArgsUsage != "" {
		line += " " + cmd.ArgsUsage
	}
	return line
}
