//go:build race

package mesh

const raceEnabled = true
