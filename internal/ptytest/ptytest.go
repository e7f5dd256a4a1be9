// Package ptytest opens pseudo-terminals for tests that need a real
// terminal: passphrase prompts without echo, the progress bar, and the
// refusal to write binary data to a terminal.
package ptytest
