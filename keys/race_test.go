//go:build race

package keys

const raceEnabled = true
