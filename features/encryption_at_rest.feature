@component:apiserver-start
Feature: Encryption at rest
  The API server stores each resource through the first provider of the first entry that matches
  it, so what lands in etcd carries that provider's prefix.

  Background:
    Given an etcd for the scenario

  @rule:encryption.order @rule:encryption.wildcard.matches
  Scenario: Entries are processed in order and *.* matches every resource
    Given the file "encryption.yaml":
      """
      apiVersion: {apiVersion}
      kind: EncryptionConfiguration
      resources:
      - resources: [events.{group}]
        providers:
        - aescbc: {keys: [{name: first, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}
      - resources: ["*.*"]
        providers:
        - secretbox: {keys: [{name: second, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}
      """
    When the API server is started with "--etcd-servers={etcd} --encryption-provider-config={dir}/encryption.yaml"
    And an event "e1" exists
    And a pod "p1" is created
    Then etcd holds the event "e1" stored with the prefix "{encryptionPrefix}aescbc:v1:first:"
    And etcd holds the pod "p1" stored with the prefix "{encryptionPrefix}secretbox:v1:second:"

  @rule:encryption.wildcard.matches
  Scenario: *. matches the core resources and *.<group> the resources of the group
    Given the file "encryption.yaml":
      """
      apiVersion: {apiVersion}
      kind: EncryptionConfiguration
      resources:
      - resources: ["*."]
        providers:
        - aesgcm: {keys: [{name: core, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}
      - resources: ["*.{group}"]
        providers:
        - secretbox: {keys: [{name: events, secret: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=}]}
      """
    When the API server is started with "--etcd-servers={etcd} --encryption-provider-config={dir}/encryption.yaml"
    And an event "e1" exists
    And a pod "p1" is created
    Then etcd holds the event "e1" stored with the prefix "{encryptionPrefix}secretbox:v1:events:"
    And etcd holds the pod "p1" stored with the prefix "{encryptionPrefix}aesgcm:v1:core:"
