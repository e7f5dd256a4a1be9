//go:build !race

package c4gh

const raceEnabled = false
