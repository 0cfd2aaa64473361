// Package iptables keeps the iptables utility chains the kubelet keeps with
// --make-iptables-util-chains, renamed: the ORCH-IPTABLES-HINT chain in the mangle table, by which
// tools tell which iptables mode the host uses, and on IPv4 the ORCH-FIREWALL chain, jumped to
// from INPUT and OUTPUT, dropping packets to 127.0.0.0/8 from elsewhere (route_localnet's hole).
// A canary chain in the mangle, nat and filter tables is checked every minute; when something has
// flushed the tables the chains are made again.
package iptables
