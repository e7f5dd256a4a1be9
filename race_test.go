//go:build race

package main

// raceEnabled is set under -race; see TestScript.
const raceEnabled = true
