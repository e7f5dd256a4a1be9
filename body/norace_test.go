//go:build !race

package body

const raceEnabled = false
