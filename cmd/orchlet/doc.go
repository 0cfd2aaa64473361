// Command orchlet is the node agent. It parses its options, applies logging and runs the agent
// (components/orchlet/app) on the real host until SIGINT or SIGTERM.
package main
