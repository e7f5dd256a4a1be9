//go:build !race

package keys

const raceEnabled = false
