//go:build race

package meshsim

// raceEnabled reports whether the binary was built with -race.
const raceEnabled = true
