// Command orchlet is the node agent. It parses its options, applies logging, runs the start-up checks
// on the real host and then runs until SIGINT or SIGTERM.
package main
