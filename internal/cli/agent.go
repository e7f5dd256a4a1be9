package cli

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/c4gh-go/crypt4gh/agent"
	"github.com/c4gh-go/crypt4gh/internal/keyfile"
)

// agentOptions are the flags of agent.
type agentOptions struct {
	Keys           cli.StringSlice
	PassphraseFile string
	Lifetime       string
	Confirm        bool
	Daemon         bool
	Stop           bool
	List           bool
	Lock           bool
	Unlock         bool
	Quiet          bool
	Socket         string
}

func agentCommand(e *env) command {
	o := &agentOptions{}
	return command{Command: &cli.Command{
		Name:  "agent",
		Usage: "hold unlocked secret keys for the commands of this tool and for samtools",
		UsageText: "crypt4gh agent --sk KEY… [--passphrase-file F] [-t DURATION] [--confirm] [--socket PATH] -- COMMAND [ARG…]\n" +
			"       eval \"$(crypt4gh agent --sk KEY… [-t DURATION] [--socket PATH] --daemon)\"\n" +
			"       crypt4gh agent --list | --lock | --unlock | --stop",
		Description: "Unlocks each --sk once (its passphrase from --passphrase-file, C4GH_PASSPHRASE\n" +
			"or the terminal), then runs COMMAND with CRYPT4GH_AGENT (a socket) and\n" +
			"CRYPT4GH_PK (the agent's public key) in its environment, and without\n" +
			"C4GH_PASSPHRASE and C4GH_SECRET_KEY. Inside it, every command of this tool\n" +
			"given no --sk opens header packets through the agent, and so does samtools\n" +
			"with the htslib-crypt4gh plug-in (crypt4gh:FILE): the secret keys never leave\n" +
			"the agent, which exits with COMMAND's status, removing its socket.\n" +
			"\n" +
			"With --daemon the agent runs in the background and prints the shell lines\n" +
			"that export its variables, as ssh-agent does; --stop ends it. --list prints the\n" +
			"public key and name of each key held; --lock asks a passphrase and makes the\n" +
			"agent refuse every request until --unlock gives it again.\n" +
			"\n" +
			"The socket (mode 0600) is in a folder of mode 0700 in $XDG_RUNTIME_DIR or the\n" +
			"temporary folder, and the agent serves only processes of its own user\n" +
			"(SO_PEERCRED), whatever the socket's mode. The keys are held in memory locked\n" +
			"against swapping where the system allows, and erased on exit. After -t (a\n" +
			"duration such as 30m or 8h, or seconds) the keys are erased and requests fail\n" +
			"with exit 3. With --confirm the agent asks on its terminal before each\n" +
			"connection's first use of a key.\n" +
			"\n" +
			"reencrypt, rearrange, splice and serve without --sk use the agent's first key\n" +
			"(or CRYPT4GH_SECRET's): it seals their new packets with that key as writer,\n" +
			"as --sk would. encrypt --sk, keygen and pubkey still need the key file.\n" +
			"With --socket PATH the socket is made there: one that a killed agent left is\n" +
			"replaced, a live agent's is refused.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "sk", Usage: "a secret key `PATH` to hold (repeatable)", EnvVars: []string{secretKeyEnv}, Destination: &o.Keys},
			passphraseFileFlag(&o.PassphraseFile),
			&cli.StringFlag{Name: "lifetime", Aliases: []string{"t"}, Usage: "erase the keys after `DURATION` (30m, 8h, or seconds)", Destination: &o.Lifetime},
			&cli.BoolFlag{Name: "confirm", Usage: "ask on the agent's terminal before each connection's first use of a key", Destination: &o.Confirm},
			&cli.StringFlag{Name: "socket", Aliases: []string{"a"}, Usage: "make the socket at `PATH` (a socket left there by a killed agent is replaced, a live one's is not)", Destination: &o.Socket},
			&cli.BoolFlag{Name: "daemon", Usage: "run in the background and print the shell lines that export its variables", Destination: &o.Daemon},
			&cli.BoolFlag{Name: "stop", Usage: "stop the agent of CRYPT4GH_AGENT and print the lines that unset its variables", Destination: &o.Stop},
			&cli.BoolFlag{Name: "list", Usage: "list the keys the agent of CRYPT4GH_AGENT holds", Destination: &o.List},
			&cli.BoolFlag{Name: "lock", Usage: "lock the agent with a passphrase (asked twice, or --passphrase-file)", Destination: &o.Lock},
			&cli.BoolFlag{Name: "unlock", Usage: "unlock the agent with the passphrase that locked it", Destination: &o.Unlock},
			quietFlag(&o.Quiet, false),
		},
		Action: func(c *cli.Context) error { return runAgent(e.start(c, o.Quiet, nil), o) },
	}, page: page{
		env: []string{secretKeyEnv, passphraseEnv, agent.SocketEnv, agent.PKEnv, agent.SecretEnv},
		examples: []string{
			"crypt4gh agent --sk ~/.c4gh/key -t 8h -- $SHELL",
			"crypt4gh decrypt -i reads.bam.c4gh -o reads.bam",
			"HTS_PATH=~/hts samtools view crypt4gh:reads.bam.c4gh chr20",
			"eval \"$(crypt4gh agent --sk ~/.c4gh/key --daemon)\"",
			"crypt4gh reencrypt --recipient_pk bob.pub -i f.c4gh -o bob.c4gh",
			"crypt4gh agent --list",
			"eval \"$(crypt4gh agent --stop)\"",
		},
	}}
}

func runAgent(e *env, o *agentOptions) error {
	// Before any key is read: the agent's memory is its own.
	if err := undumpable(); err != nil {
		return fmt.Errorf("failed to keep the agent's memory from other processes: %w", err)
	}
	if a, s, ok, err := agent.TakeOver(); ok {
		if err != nil {
			return err
		}
		done := e.cleanup.OnInterrupt(s.Remove)
		defer done()
		return serveAgent(e, a, s, nil)
	}
	modes := 0
	for _, m := range []bool{o.Daemon, o.Stop, o.List, o.Lock, o.Unlock} {
		if m {
			modes++
		}
	}
	if modes > 1 {
		return usagef("--daemon, --stop, --list, --lock and --unlock exclude each other")
	}
	if o.Stop || o.List || o.Lock || o.Unlock {
		if len(e.args) > 0 || len(o.Keys.Value()) > 0 || o.Socket != "" {
			return usagef("--stop, --list, --lock and --unlock talk to the agent of %s: no --sk, --socket or COMMAND", agent.SocketEnv)
		}
		return agentRequest(e, o)
	}
	if len(o.Keys.Value()) == 0 {
		return withHint(usagef("no secret key for the agent"), "give --sk KEY (repeatable)")
	}
	if o.Daemon == (len(e.args) > 0) {
		return withHint(usagef("give the agent a COMMAND to run, or --daemon"),
			"crypt4gh agent --sk KEY -- $SHELL starts a shell that uses it")
	}
	if o.Daemon && o.Confirm {
		return usagef("--confirm needs the agent's terminal: use it without --daemon")
	}
	lifetime, err := parseLifetime(o.Lifetime)
	if err != nil {
		return err
	}
	a, err := agent.New()
	if err != nil {
		return err
	}
	defer a.Close()
	for _, path := range o.Keys.Value() {
		sk, _, err := e.keyLoader().SecretKey(expandHome(path), o.PassphraseFile)
		if err != nil {
			return err
		}
		err = a.Add(sk, path, lifetime)
		sk.Zero()
		if err != nil {
			return err
		}
	}
	if !a.MemoryLocked() && !e.quiet {
		e.warnf("the keys' memory could not be locked against swapping (see ulimit -l)")
	}
	a.Log = func(format string, args ...any) { e.warnf("agent: "+format, args...) }
	if o.Confirm {
		a.Confirm = agent.ConfirmOnTerminal
	}
	s, err := listenAgent(o.Socket)
	if err != nil {
		return err
	}
	done := e.cleanup.OnInterrupt(s.Remove)
	defer done()
	if o.Daemon {
		exe, err := os.Executable()
		if err != nil {
			s.Remove()
			return err
		}
		// The daemon lives on: not with the passphrase in its environment.
		pid, err := agent.Detach(a, s, exe, []string{"agent"}, agent.Without(os.Environ(), passphraseEnv, secretKeyEnv))
		if err != nil {
			s.Remove()
			return err
		}
		done() // the socket is the daemon's now
		_, err = fmt.Fprint(e.stdout, agent.Exports(s.Path, a.PublicKey(), pid))
		return err
	}
	return serveAgent(e, a, s, e.args)
}

// listenAgent makes the agent's socket: at path, or in a folder of its own
// when path is empty.
func listenAgent(path string) (*agent.Socket, error) {
	if path == "" {
		return agent.Listen()
	}
	s, err := agent.ListenAt(expandHome(path))
	if errors.Is(err, agent.ErrLive) {
		return nil, withHint(err, "stop it first (CRYPT4GH_AGENT=%s crypt4gh agent --stop), or use it", quoteName(path))
	}
	return s, err
}

// parseLifetime reads -t: a Go duration or a number of seconds.
func parseLifetime(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		n, nerr := strconv.ParseUint(s, 10, 32)
		if nerr != nil {
			return 0, usagef("-t %q is not a duration (30m, 8h, or seconds)", s)
		}
		d = time.Duration(n) * time.Second
	}
	if d <= 0 {
		return 0, usagef("-t %q is not a positive duration", s)
	}
	return d, nil
}

// agentSignals are the signals an agent handles itself (see agent.Run).
var agentSignals = []os.Signal{syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT}

// serveAgent serves a on s until COMMAND ends (when argv is not empty),
// or until the agent is stopped or receives a signal, then erases the keys
// and removes the socket. With a COMMAND it ends with its exit status.
func serveAgent(e *env, a *agent.Agent, s *agent.Socket, argv []string) error {
	// The signals are the agent's from here: it passes them on to COMMAND
	// or stops on them, and removes its socket on the way out. They are
	// caught before the process's cleanup lets them go, so that none in
	// between ends the process as by default.
	held := make(chan os.Signal, 1)
	signal.Notify(held, agentSignals...)
	defer signal.Stop(held)
	e.cleanup.Stop()
	defer s.Remove()
	defer a.Close()
	if len(argv) == 0 {
		return a.ServeUntilStopped(s)
	}
	// Inside the agent the keys come from it: neither the passphrase nor
	// a key file of the caller's environment is passed on.
	code, err := a.Run(s, argv, agent.Environ(os.Environ(), s.Path, a.PublicKey(), passphraseEnv, secretKeyEnv))
	if err != nil {
		return usage(fmt.Errorf("failed to run %s: %w", quoteName(argv[0]), pathErr(err)))
	}
	return quietExit(code)
}

// agentRequest runs --stop, --list, --lock or --unlock against the agent
// of CRYPT4GH_AGENT.
func agentRequest(e *env, o *agentOptions) error {
	c, err := agent.FromEnv()
	if err != nil {
		return err
	}
	if c == nil {
		return withHint(usagef("%s is not set: no agent to talk to", agent.SocketEnv),
			"start one with crypt4gh agent --sk KEY -- $SHELL, or eval \"$(crypt4gh agent --sk KEY --daemon)\"")
	}
	defer c.Close()
	switch {
	case o.Stop:
		if err := c.Stop(); err != nil {
			return err
		}
		_, err = fmt.Fprint(e.stdout, agent.Unsets())
		return err
	case o.List:
		infos, err := c.List()
		if err != nil {
			return err
		}
		for _, k := range infos {
			state := ""
			if k.Expired {
				state = " (expired)"
			}
			fmt.Fprintf(e.stdout, "%s %s%s\n", k.PublicKey, quoteName(k.Name), state)
		}
		return nil
	}
	src := keyfile.Source{File: o.PassphraseFile, Flag: "passphrase-file", Confirm: o.Lock}
	prompt := "Passphrase to unlock the agent: "
	if o.Lock {
		prompt = "Passphrase to lock the agent: "
	}
	pass, err := e.keyLoader().Passphrase(src, prompt)
	if err != nil {
		return err
	}
	defer clear(pass)
	if o.Lock {
		return c.Lock(pass)
	}
	return c.Unlock(pass)
}
