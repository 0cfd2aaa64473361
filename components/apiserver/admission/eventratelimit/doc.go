// Package eventratelimit is Kubernetes' EventRateLimit admission plugin: token buckets that cap
// how fast events are created and updated, server-wide, per namespace, per user and per
// source and object.
package eventratelimit
