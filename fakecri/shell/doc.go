// Package shell is the small shell fakecri answers an exec with where its script has no rule: a
// few commands (echo, cat, ls, grep, id, pgrep, sleep, sh and the like) over a container's
// environment, its script's files and its bind mounts, each answering an exit code.
package shell
