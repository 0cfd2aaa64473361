// Package exhaust is orchchaos' exhaustion campaign: an API server attacked at once by slow and
// oversized requests, unread lists and a watch storm over thousands of idle connections, while
// bystanders in a process of their own probe /readyz and write as a well-behaved client.
package exhaust
