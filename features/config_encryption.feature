@component:config-check
Feature: Encryption configuration
  EncryptionConfiguration names, per resource, the providers that encrypt it at rest, the first
  provider writing and every provider reading.

  Scenario Outline: <change> is accepted
    Given a valid EncryptionConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is accepted

    @rule:encryption.valid @rule:limits.encryption.key-sizes
    Examples: every provider with keys of every allowed size
      | change                | path                       | value                                                                                                                                      |
      | an AES-GCM 16-byte key | resources[0].providers[0] | {"aesgcm": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODw=="}]}}                                                                |
      | an AES-GCM 24-byte key | resources[0].providers[0] | {"aesgcm": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"}]}}                                                        |
      | an AES-GCM 32-byte key | resources[0].providers[0] | {"aesgcm": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}}                                            |
      | a secretbox key        | resources[0].providers[0] | {"secretbox": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}}                                         |
      | a KMS v2 provider      | resources[0].providers[0] | {"kms": {"apiVersion": "v2", "name": "kms-v2", "endpoint": "unix:///var/run/kms.sock", "timeout": "10s"}}                                   |
      | a KMS v1 cache size    | resources[0].providers[0] | {"kms": {"name": "kms-v1", "endpoint": "unix:///var/run/kms.sock", "cachesize": -1}}                                                        |

    @rule:encryption.resource.name @rule:encryption.valid
    Examples: resource names and wildcards
      | change                   | path                    | value                                 |
      | grouped resources        | resources[0].resources  | ["secrets", "deployments.apps"]       |
      | every resource           | resources[0].resources  | ["*.*"]                               |
      | every resource of group  | resources[0].resources  | ["*.apps"]                            |
      | every core resource      | resources[0].resources  | ["*."]                                |

  @rule:encryption.wildcard.overlap
  Scenario: an identity entry may precede a wildcard entry
    Given a valid EncryptionConfiguration file
    And its "resources[1]" is set to {"resources": ["*.*"], "providers": [{"identity": {}}]}
    When the configuration is checked
    Then it is accepted

  Scenario Outline: <mistake> is refused
    Given a valid EncryptionConfiguration file
    And its "<path>" is set to <value>
    When the configuration is checked
    Then it is refused at "<where>"

    @rule:encryption.resources.required
    Examples: resources and providers required
      | mistake                  | path                    | value | where                   |
      | no entries               | resources               | []    | resources               |
      | an entry without names   | resources[0].resources  | []    | resources[0].resources  |
      | an entry without providers | resources[0].providers | []    | resources[0].providers  |

    @rule:encryption.resource.name
    Examples: resource names
      | mistake               | path                    | value            | where                      |
      | a capital letter      | resources[0].resources  | ["Secrets"]      | resources[0].resources[0]  |
      | a lone star           | resources[0].resources  | ["*"]            | resources[0].resources[0]  |
      | a bad syntax          | resources[0].resources  | ["secrets/x"]    | resources[0].resources[0]  |

    @rule:encryption.wildcard.overlap
    Examples: overlapping wildcards
      | mistake                          | path                    | value                       | where                      |
      | every resource and a group       | resources[0].resources  | ["*.*", "*.apps"]           | resources[0].resources     |
      | every core resource twice        | resources[0].resources  | ["*.", "*."]                | resources[0].resources[0]  |

    @rule:orch.encryption.resource.unique
    Examples: resources listed once
      | mistake                  | path                    | value                       | where                      |
      | a repeated resource      | resources[0].resources  | ["secrets", "secrets"]      | resources[0].resources[0]  |
      | a resource after its wildcard | resources          | [{"resources": ["*."], "providers": [{"identity": {}}]}, {"resources": ["secrets"], "providers": [{"identity": {}}]}] | resources[1].resources[0] |

    @rule:encryption.provider.one-kind
    Examples: one kind per provider
      | mistake              | path                      | value                                                     | where                     |
      | two kinds at once    | resources[0].providers[0] | {"identity": {}, "secretbox": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}]}} | resources[0].providers[0] |
      | no kind              | resources[0].providers[0] | {}                                                        | resources[0].providers[0] |

    @rule:encryption.keys.required
    Examples: keys required
      | mistake            | path                      | value                     | where                                 |
      | AES-CBC no keys    | resources[0].providers[0] | {"aescbc": {"keys": []}}  | resources[0].providers[0].aescbc.keys |
      | secretbox no keys  | resources[0].providers[0] | {"secretbox": {"keys": []}} | resources[0].providers[0].secretbox.keys |

    @rule:encryption.key.name-and-secret
    Examples: keys have a name and a secret
      | mistake        | path                                       | value                                                       | where                                           |
      | no name        | resources[0].providers[0].aescbc.keys      | [{"secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}] | resources[0].providers[0].aescbc.keys[0].name   |
      | no secret      | resources[0].providers[0].aescbc.keys      | [{"name": "k"}]                                             | resources[0].providers[0].aescbc.keys[0].secret |

    @rule:encryption.key.secret-base64
    Examples: secrets are base64
      | mistake             | path                                       | value                                  | where                                           |
      | a non-base64 secret | resources[0].providers[0].aescbc.keys      | [{"name": "k", "secret": "not base64!"}] | resources[0].providers[0].aescbc.keys[0].secret |

    @rule:limits.encryption.key-sizes
    Examples: key sizes
      | mistake                  | path                      | value                                                                                          | where                                              |
      | a 16-byte AES-CBC key    | resources[0].providers[0] | {"aescbc": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODw=="}]}}                    | resources[0].providers[0].aescbc.keys[0].secret    |
      | a 20-byte AES-GCM key    | resources[0].providers[0] | {"aesgcm": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhM="}]}}                | resources[0].providers[0].aesgcm.keys[0].secret    |
      | a 16-byte secretbox key  | resources[0].providers[0] | {"secretbox": {"keys": [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODw=="}]}}                 | resources[0].providers[0].secretbox.keys[0].secret |

    @rule:orch.encryption.key.name.unique
    Examples: key names unique
      | mistake          | path                                  | value                                                                                                                     | where                                         |
      | a repeated name  | resources[0].providers[0].aescbc.keys | [{"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}, {"name": "k", "secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}] | resources[0].providers[0].aescbc.keys[1].name |

    @rule:encryption.kms.name.required
    Examples: KMS name required
      | mistake       | path                      | value                                                   | where                              |
      | no KMS name   | resources[0].providers[0] | {"kms": {"endpoint": "unix:///var/run/kms.sock"}}       | resources[0].providers[0].kms.name |

    @rule:encryption.kms.endpoint.required
    Examples: KMS endpoint required
      | mistake           | path                      | value                       | where                                  |
      | no KMS endpoint   | resources[0].providers[0] | {"kms": {"name": "kms"}}    | resources[0].providers[0].kms.endpoint |

    @rule:encryption.kms.cachesize.v1-only
    Examples: cachesize only for KMS v1
      | mistake                  | path                      | value                                                                                  | where                                   |
      | a cache size on KMS v2   | resources[0].providers[0] | {"kms": {"apiVersion": "v2", "name": "kms", "endpoint": "unix:///k.sock", "cachesize": 10}} | resources[0].providers[0].kms.cachesize |

    @rule:orch.encryption.kms.api-version
    Examples: KMS versions
      | mistake          | path                      | value                                                                   | where                                    |
      | KMS version v3   | resources[0].providers[0] | {"kms": {"apiVersion": "v3", "name": "kms", "endpoint": "unix:///k.sock"}} | resources[0].providers[0].kms.apiVersion |

    @rule:orch.encryption.kms.timeout.positive
    Examples: KMS timeouts
      | mistake              | path                      | value                                                                | where                                 |
      | a negative timeout   | resources[0].providers[0] | {"kms": {"name": "kms", "endpoint": "unix:///k.sock", "timeout": "-1s"}} | resources[0].providers[0].kms.timeout |
