// Package streams is fakecri's CRI streaming server: Kubernetes' streaming library serving the
// URLs Exec, Attach and PortForward answer, and behind them a streamed exec (the script's answer
// or the built-in shell, on a terminal when asked), an attach (the container's log lines, or its
// shell reading the client's input) and port-forwarding to the script's responders. It reads the
// runtime through the Runtime interface it owns.
package streams
