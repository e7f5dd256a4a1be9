package agent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/c4gh-go/crypt4gh/keys"
)

// childEnv marks the process that a daemon agent hands its keys to; it
// names the socket. The listening socket is descriptor 3 and the keys come
// on descriptor 4.
const childEnv = "CRYPT4GH_AGENT_TAKEOVER"

// childDirEnv tells that daemon that the socket's folder was made for it
// (and is to be removed with it), not named by the user.
const childDirEnv = "CRYPT4GH_AGENT_TAKEOVER_DIR"

// Environ returns env (as os.Environ gives it) for the agent's command:
// CRYPT4GH_AGENT and CRYPT4GH_PK set, and the variables of drop removed
// (the passphrase, read once by the agent).
func Environ(env []string, sock string, pk keys.PublicKey, drop ...string) []string {
	out := Without(env, slices.Concat(drop, []string{SocketEnv, PKEnv, PIDEnv, childEnv, childDirEnv})...)
	return append(out, SocketEnv+"="+sock, PKEnv+"="+pk.String())
}

// Without returns env (as os.Environ gives it) without the variables
// named.
func Without(env []string, names ...string) []string {
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Exports returns the lines of shell that make the agent known, as
// ssh-agent prints them: eval them.
func Exports(sock string, pk keys.PublicKey, pid int) string {
	return fmt.Sprintf("%s=%s; export %s;\n%s=%s; export %s;\n%s=%d; export %s;\n",
		SocketEnv, shellQuote(sock), SocketEnv, PKEnv, pk.String(), PKEnv, PIDEnv, pid, PIDEnv)
}

// Unsets returns the lines of shell that forget a stopped agent.
func Unsets() string {
	return fmt.Sprintf("unset %s %s %s;\n", SocketEnv, PKEnv, PIDEnv)
}

// Detach starts the program exe (this tool) as a daemon, in a session of
// its own, with the environment env (which should not hold what gave the
// keys, such as a passphrase: the daemon's environment lasts as long as
// it does), and hands it the socket and the agent's keys: it calls
// [TakeOver] and serves until it is stopped. It returns the daemon's
// process id. The caller keeps a and s, and should Close a without
// removing s (the daemon removes it when it stops).
func Detach(a *Agent, s *Socket, exe string, args, env []string) (int, error) {
	lf, err := s.File()
	if err != nil {
		return 0, err
	}
	defer lf.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return 0, err
	}
	defer r.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return 0, err
	}
	defer null.Close()
	cmd := exec.Command(exe, args...)
	cmd.Env = append(Without(env, childEnv, childDirEnv), childEnv+"="+s.Path)
	if s.Dir != "" {
		cmd.Env = append(cmd.Env, childDirEnv+"=1")
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = null, null, null
	cmd.ExtraFiles = []*os.File{lf, r}
	cmd.Dir = "/"
	cmd.SysProcAttr = detachAttr()
	if err := cmd.Start(); err != nil {
		w.Close()
		return 0, fmt.Errorf("failed to start the agent: %w", err)
	}
	err = a.Export(w)
	w.Close()
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return 0, err
	}
	pid := cmd.Process.Pid
	cmd.Process.Release()
	return pid, nil
}

// TakeOver reports whether this process is a daemon started by [Detach];
// if so it returns the agent and socket handed to it.
func TakeOver() (a *Agent, s *Socket, ok bool, err error) {
	path := os.Getenv(childEnv)
	if path == "" {
		return nil, nil, false, nil
	}
	ownDir := os.Getenv(childDirEnv) != ""
	os.Unsetenv(childEnv)
	os.Unsetenv(childDirEnv)
	st := os.NewFile(4, "agent state")
	a, err = Import(st)
	st.Close()
	if err != nil {
		return nil, nil, true, err
	}
	s, err = FromFile(os.NewFile(3, "agent socket"), path, ownDir)
	if err != nil {
		a.Close()
		return nil, nil, true, err
	}
	return a, s, true, nil
}

// PID returns the daemon's process id from CRYPT4GH_AGENT_PID, 0 when
// unset.
func PID() int {
	n, _ := strconv.Atoi(os.Getenv(PIDEnv))
	return n
}

// ServeUntilStopped serves a on s until a client asks it to stop or the
// process receives SIGTERM, SIGHUP, SIGINT or SIGQUIT.
func (a *Agent) ServeUntilStopped(s *Socket) error {
	served := make(chan error, 1)
	go func() { served <- a.Serve(s.Listener()) }()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	select {
	case <-sigs:
	case <-a.Stopped():
	case err := <-served:
		return err
	}
	return nil
}

// Run serves a on s while the command argv runs with env (see [Environ])
// and the standard streams of this process, and returns its exit status
// (128+N when signal N ended it). SIGTERM and SIGHUP are passed on to the
// command; SIGINT and SIGQUIT, which the terminal sends the command too,
// are ignored. A client that stops the agent ends its service and erases
// its keys at once; Run still waits for the command. An error means the
// command could not be started.
func (a *Agent) Run(s *Socket, argv []string, env []string) (int, error) {
	go a.Serve(s.Listener())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := a.Stopped()
	for {
		select {
		case <-stopped:
			// Asked to stop: the keys go now, not when the command ends.
			a.Close()
			stopped = nil
		case sig := <-sigs:
			if sig != syscall.SIGINT && sig != syscall.SIGQUIT {
				cmd.Process.Signal(sig)
			}
		case err := <-done:
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
					return 128 + int(st.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			if err != nil {
				return 1, nil
			}
			return 0, nil
		}
	}
}
