//go:build race

package sim

// raceDetector: the race detector drops a quarter of sync.Pool's Puts at random, so a pooled
// buffer is made again now and then and allocation counts move with it.
const raceDetector = true
