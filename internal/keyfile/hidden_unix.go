//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package keyfile

import (
	"os"
	"os/signal"
	"sync"

	"golang.org/x/sys/unix"
)

// readLineHidden reads a line from the terminal tty with echo off, as
// term.ReadPassword does, and besides:
//   - a process stopped at the prompt (Ctrl-Z) and continued turns echo
//     off again, and shows the prompt again: the shell turns echo on
//     when it takes the terminal back, and what was typed after fg
//     would be shown;
//   - end of input (Ctrl-D on an empty line) ends the prompt, where
//     term.ReadPassword waits for more;
//   - the line is kept in one buffer, cleared on failure, without the
//     copies that growing it would leave.
func readLineHidden(tty *os.File, prompt string) ([]byte, error) {
	fd := int(tty.Fd())
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return nil, err
	}
	hidden := *old
	hidden.Lflag &^= unix.ECHO
	hidden.Lflag |= unix.ICANON | unix.ISIG
	hidden.Iflag |= unix.ICRNL
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &hidden); err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		finished bool
	)
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, unix.SIGCONT)
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-cont:
				mu.Lock()
				if !finished {
					unix.IoctlSetTermios(fd, ioctlSetTermios, &hidden)
					tty.WriteString(prompt)
				}
				mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	defer func() {
		signal.Stop(cont)
		close(stop)
		mu.Lock()
		finished = true
		unix.IoctlSetTermios(fd, ioctlSetTermios, old)
		mu.Unlock()
	}()

	line := make([]byte, 0, 256)
	var b [1]byte
	for {
		n, err := unix.Read(fd, b[:])
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			clear(line)
			return nil, err
		case n == 0:
			if len(line) == 0 {
				return nil, errNoInput
			}
			return line, nil
		}
		switch b[0] {
		case '\n':
			return line, nil
		case '\r':
		case '\b', 0x7f: // an erase the terminal did not handle itself
			if len(line) > 0 {
				line = line[:len(line)-1]
			}
		default:
			if len(line) == cap(line) {
				grown := make([]byte, len(line), 2*cap(line))
				copy(grown, line)
				clear(line)
				line = grown
			}
			line = append(line, b[0])
		}
	}
}
