@component:agent
Feature: Node agent feature gates
  --feature-gates takes <Name>=true|false for every gate of SPEC.md; each gate carries its stage and
  default, AllAlpha and AllBeta toggle whole stages, and an unknown gate is refused.

  Scenario Outline: <gate> is <stage> with default <default>
    When the agent's help is read
    Then the help lists feature gate "<gate>" as "<stage>" with default "<default>"
    When the agent starts with "--feature-gates=<gate>=<default>"
    Then it starts

    @rule:orchlet.gate.APIServingWithRoutine @rule:versioning.gates.stages
    Examples: APIServingWithRoutine
      | gate | stage | default |
      | APIServingWithRoutine | ALPHA | false |

    @rule:orchlet.gate.AllAlpha @rule:versioning.gates.stages
    Examples: AllAlpha
      | gate | stage | default |
      | AllAlpha | ALPHA | false |

    @rule:orchlet.gate.AllowUnsafeMalformedObjectDeletion @rule:versioning.gates.stages
    Examples: AllowUnsafeMalformedObjectDeletion
      | gate | stage | default |
      | AllowUnsafeMalformedObjectDeletion | ALPHA | false |

    @rule:orchlet.gate.CBORServingAndStorage @rule:versioning.gates.stages
    Examples: CBORServingAndStorage
      | gate | stage | default |
      | CBORServingAndStorage | ALPHA | false |

    @rule:orchlet.gate.CPUManagerPolicyAlphaOptions @rule:versioning.gates.stages
    Examples: CPUManagerPolicyAlphaOptions
      | gate | stage | default |
      | CPUManagerPolicyAlphaOptions | ALPHA | false |

    @rule:orchlet.gate.CSIVolumeHealth @rule:versioning.gates.stages
    Examples: CSIVolumeHealth
      | gate | stage | default |
      | CSIVolumeHealth | ALPHA | false |

    @rule:orchlet.gate.ClearingNominatedNodeNameAfterBinding @rule:versioning.gates.stages
    Examples: ClearingNominatedNodeNameAfterBinding
      | gate | stage | default |
      | ClearingNominatedNodeNameAfterBinding | ALPHA | false |

    @rule:orchlet.gate.ClientsAllowCBOR @rule:versioning.gates.stages
    Examples: ClientsAllowCBOR
      | gate | stage | default |
      | ClientsAllowCBOR | ALPHA | false |

    @rule:orchlet.gate.ClientsPreferCBOR @rule:versioning.gates.stages
    Examples: ClientsPreferCBOR
      | gate | stage | default |
      | ClientsPreferCBOR | ALPHA | false |

    @rule:orchlet.gate.CloudControllerManagerWebhook @rule:versioning.gates.stages
    Examples: CloudControllerManagerWebhook
      | gate | stage | default |
      | CloudControllerManagerWebhook | ALPHA | false |

    @rule:orchlet.gate.ComponentFlagz @rule:versioning.gates.stages
    Examples: ComponentFlagz
      | gate | stage | default |
      | ComponentFlagz | ALPHA | false |

    @rule:orchlet.gate.ComponentStatusz @rule:versioning.gates.stages
    Examples: ComponentStatusz
      | gate | stage | default |
      | ComponentStatusz | ALPHA | false |

    @rule:orchlet.gate.ContainerRestartRules @rule:versioning.gates.stages
    Examples: ContainerRestartRules
      | gate | stage | default |
      | ContainerRestartRules | ALPHA | false |

    @rule:orchlet.gate.ContainerStopSignals @rule:versioning.gates.stages
    Examples: ContainerStopSignals
      | gate | stage | default |
      | ContainerStopSignals | ALPHA | false |

    @rule:orchlet.gate.CrossNamespaceVolumeDataSource @rule:versioning.gates.stages
    Examples: CrossNamespaceVolumeDataSource
      | gate | stage | default |
      | CrossNamespaceVolumeDataSource | ALPHA | false |

    @rule:orchlet.gate.CustomCPUCFSQuotaPeriod @rule:versioning.gates.stages
    Examples: CustomCPUCFSQuotaPeriod
      | gate | stage | default |
      | CustomCPUCFSQuotaPeriod | ALPHA | false |

    @rule:orchlet.gate.DRAConsumableCapacity @rule:versioning.gates.stages
    Examples: DRAConsumableCapacity
      | gate | stage | default |
      | DRAConsumableCapacity | ALPHA | false |

    @rule:orchlet.gate.DRADeviceBindingConditions @rule:versioning.gates.stages
    Examples: DRADeviceBindingConditions
      | gate | stage | default |
      | DRADeviceBindingConditions | ALPHA | false |

    @rule:orchlet.gate.DRADeviceTaints @rule:versioning.gates.stages
    Examples: DRADeviceTaints
      | gate | stage | default |
      | DRADeviceTaints | ALPHA | false |

    @rule:orchlet.gate.DRAExtendedResource @rule:versioning.gates.stages
    Examples: DRAExtendedResource
      | gate | stage | default |
      | DRAExtendedResource | ALPHA | false |

    @rule:orchlet.gate.DRAPartitionableDevices @rule:versioning.gates.stages
    Examples: DRAPartitionableDevices
      | gate | stage | default |
      | DRAPartitionableDevices | ALPHA | false |

    @rule:orchlet.gate.DeploymentReplicaSetTerminatingReplicas @rule:versioning.gates.stages
    Examples: DeploymentReplicaSetTerminatingReplicas
      | gate | stage | default |
      | DeploymentReplicaSetTerminatingReplicas | ALPHA | false |

    @rule:orchlet.gate.EnvFiles @rule:versioning.gates.stages
    Examples: EnvFiles
      | gate | stage | default |
      | EnvFiles | ALPHA | false |

    @rule:orchlet.gate.EventedPLEG @rule:versioning.gates.stages
    Examples: EventedPLEG
      | gate | stage | default |
      | EventedPLEG | ALPHA | false |

    @rule:orchlet.gate.HPAConfigurableTolerance @rule:versioning.gates.stages
    Examples: HPAConfigurableTolerance
      | gate | stage | default |
      | HPAConfigurableTolerance | ALPHA | false |

    @rule:orchlet.gate.HPAScaleToZero @rule:versioning.gates.stages
    Examples: HPAScaleToZero
      | gate | stage | default |
      | HPAScaleToZero | ALPHA | false |

    @rule:orchlet.gate.HostnameOverride @rule:versioning.gates.stages
    Examples: HostnameOverride
      | gate | stage | default |
      | HostnameOverride | ALPHA | false |

    @rule:orchlet.gate.InPlacePodVerticalScalingExclusiveCPUs @rule:versioning.gates.stages
    Examples: InPlacePodVerticalScalingExclusiveCPUs
      | gate | stage | default |
      | InPlacePodVerticalScalingExclusiveCPUs | ALPHA | false |

    @rule:orchlet.gate.InPlacePodVerticalScalingExclusiveMemory @rule:versioning.gates.stages
    Examples: InPlacePodVerticalScalingExclusiveMemory
      | gate | stage | default |
      | InPlacePodVerticalScalingExclusiveMemory | ALPHA | false |

    @rule:orchlet.gate.InTreePluginVendorUnregister @rule:versioning.gates.stages
    Examples: InTreePluginVendorUnregister
      | gate | stage | default |
      | InTreePluginVendorUnregister | ALPHA | false |

    @rule:orchlet.gate.InformerResourceVersion @rule:versioning.gates.stages
    Examples: InformerResourceVersion
      | gate | stage | default |
      | InformerResourceVersion | ALPHA | false |

    @rule:orchlet.gate.OrchletCrashLoopBackOffMax @rule:versioning.gates.stages
    Examples: OrchletCrashLoopBackOffMax
      | gate | stage | default |
      | OrchletCrashLoopBackOffMax | ALPHA | false |

    @rule:orchlet.gate.OrchletEnsureSecretPulledImages @rule:versioning.gates.stages
    Examples: OrchletEnsureSecretPulledImages
      | gate | stage | default |
      | OrchletEnsureSecretPulledImages | ALPHA | false |

    @rule:orchlet.gate.OrchletInUserNamespace @rule:versioning.gates.stages
    Examples: OrchletInUserNamespace
      | gate | stage | default |
      | OrchletInUserNamespace | ALPHA | false |

    @rule:orchlet.gate.LoggingAlphaOptions @rule:versioning.gates.stages
    Examples: LoggingAlphaOptions
      | gate | stage | default |
      | LoggingAlphaOptions | ALPHA | false |

    @rule:orchlet.gate.MaxUnavailableStatefulSet @rule:versioning.gates.stages
    Examples: MaxUnavailableStatefulSet
      | gate | stage | default |
      | MaxUnavailableStatefulSet | ALPHA | false |

    @rule:orchlet.gate.MemoryQoS @rule:versioning.gates.stages
    Examples: MemoryQoS
      | gate | stage | default |
      | MemoryQoS | ALPHA | false |

    @rule:orchlet.gate.NominatedNodeNameForExpectation @rule:versioning.gates.stages
    Examples: NominatedNodeNameForExpectation
      | gate | stage | default |
      | NominatedNodeNameForExpectation | ALPHA | false |

    @rule:orchlet.gate.PodAndContainerStatsFromCRI @rule:versioning.gates.stages
    Examples: PodAndContainerStatsFromCRI
      | gate | stage | default |
      | PodAndContainerStatsFromCRI | ALPHA | false |

    @rule:orchlet.gate.PodCertificateRequest @rule:versioning.gates.stages
    Examples: PodCertificateRequest
      | gate | stage | default |
      | PodCertificateRequest | ALPHA | false |

    @rule:orchlet.gate.PodLogsQuerySplitStreams @rule:versioning.gates.stages
    Examples: PodLogsQuerySplitStreams
      | gate | stage | default |
      | PodLogsQuerySplitStreams | ALPHA | false |

    @rule:orchlet.gate.PodTopologyLabelsAdmission @rule:versioning.gates.stages
    Examples: PodTopologyLabelsAdmission
      | gate | stage | default |
      | PodTopologyLabelsAdmission | ALPHA | false |

    @rule:orchlet.gate.QOSReserved @rule:versioning.gates.stages
    Examples: QOSReserved
      | gate | stage | default |
      | QOSReserved | ALPHA | false |

    @rule:orchlet.gate.ReduceDefaultCrashLoopBackOffDecay @rule:versioning.gates.stages
    Examples: ReduceDefaultCrashLoopBackOffDecay
      | gate | stage | default |
      | ReduceDefaultCrashLoopBackOffDecay | ALPHA | false |

    @rule:orchlet.gate.RelaxedServiceNameValidation @rule:versioning.gates.stages
    Examples: RelaxedServiceNameValidation
      | gate | stage | default |
      | RelaxedServiceNameValidation | ALPHA | false |

    @rule:orchlet.gate.ResourceHealthStatus @rule:versioning.gates.stages
    Examples: ResourceHealthStatus
      | gate | stage | default |
      | ResourceHealthStatus | ALPHA | false |

    @rule:orchlet.gate.RuntimeClassInImageCriApi @rule:versioning.gates.stages
    Examples: RuntimeClassInImageCriApi
      | gate | stage | default |
      | RuntimeClassInImageCriApi | ALPHA | false |

    @rule:orchlet.gate.StorageCapacityScoring @rule:versioning.gates.stages
    Examples: StorageCapacityScoring
      | gate | stage | default |
      | StorageCapacityScoring | ALPHA | false |

    @rule:orchlet.gate.StorageVersionAPI @rule:versioning.gates.stages
    Examples: StorageVersionAPI
      | gate | stage | default |
      | StorageVersionAPI | ALPHA | false |

    @rule:orchlet.gate.StorageVersionMigrator @rule:versioning.gates.stages
    Examples: StorageVersionMigrator
      | gate | stage | default |
      | StorageVersionMigrator | ALPHA | false |

    @rule:orchlet.gate.StrictIPCIDRValidation @rule:versioning.gates.stages
    Examples: StrictIPCIDRValidation
      | gate | stage | default |
      | StrictIPCIDRValidation | ALPHA | false |

    @rule:orchlet.gate.TopologyManagerPolicyAlphaOptions @rule:versioning.gates.stages
    Examples: TopologyManagerPolicyAlphaOptions
      | gate | stage | default |
      | TopologyManagerPolicyAlphaOptions | ALPHA | false |

    @rule:orchlet.gate.UnknownVersionInteroperabilityProxy @rule:versioning.gates.stages
    Examples: UnknownVersionInteroperabilityProxy
      | gate | stage | default |
      | UnknownVersionInteroperabilityProxy | ALPHA | false |

    @rule:orchlet.gate.UserNamespacesPodSecurityStandards @rule:versioning.gates.stages
    Examples: UserNamespacesPodSecurityStandards
      | gate | stage | default |
      | UserNamespacesPodSecurityStandards | ALPHA | false |

    @rule:orchlet.gate.AltCPUAndMemoryAffinity @rule:versioning.gates.stages
    Examples: AltCPUAndMemoryAffinity
      | gate | stage | default |
      | AltCPUAndMemoryAffinity | ALPHA | false |

    @rule:orchlet.gate.AllBeta @rule:versioning.gates.stages
    Examples: AllBeta
      | gate | stage | default |
      | AllBeta | BETA | false |

    @rule:orchlet.gate.ClusterTrustBundle @rule:versioning.gates.stages
    Examples: ClusterTrustBundle
      | gate | stage | default |
      | ClusterTrustBundle | BETA | false |

    @rule:orchlet.gate.ClusterTrustBundleProjection @rule:versioning.gates.stages
    Examples: ClusterTrustBundleProjection
      | gate | stage | default |
      | ClusterTrustBundleProjection | BETA | false |

    @rule:orchlet.gate.ConcurrentWatchObjectDecode @rule:versioning.gates.stages
    Examples: ConcurrentWatchObjectDecode
      | gate | stage | default |
      | ConcurrentWatchObjectDecode | BETA | false |

    @rule:orchlet.gate.CoordinatedLeaderElection @rule:versioning.gates.stages
    Examples: CoordinatedLeaderElection
      | gate | stage | default |
      | CoordinatedLeaderElection | BETA | false |

    @rule:orchlet.gate.DeclarativeValidationTakeover @rule:versioning.gates.stages
    Examples: DeclarativeValidationTakeover
      | gate | stage | default |
      | DeclarativeValidationTakeover | BETA | false |

    @rule:orchlet.gate.ImageVolume @rule:versioning.gates.stages
    Examples: ImageVolume
      | gate | stage | default |
      | ImageVolume | BETA | false |

    @rule:orchlet.gate.LocalStorageCapacityIsolationFSQuotaMonitoring @rule:versioning.gates.stages
    Examples: LocalStorageCapacityIsolationFSQuotaMonitoring
      | gate | stage | default |
      | LocalStorageCapacityIsolationFSQuotaMonitoring | BETA | false |

    @rule:orchlet.gate.MutableCSINodeAllocatableCount @rule:versioning.gates.stages
    Examples: MutableCSINodeAllocatableCount
      | gate | stage | default |
      | MutableCSINodeAllocatableCount | BETA | false |

    @rule:orchlet.gate.MutatingAdmissionPolicy @rule:versioning.gates.stages
    Examples: MutatingAdmissionPolicy
      | gate | stage | default |
      | MutatingAdmissionPolicy | BETA | false |

    @rule:orchlet.gate.NodeLogQuery @rule:versioning.gates.stages
    Examples: NodeLogQuery
      | gate | stage | default |
      | NodeLogQuery | BETA | false |

    @rule:orchlet.gate.SELinuxMount @rule:versioning.gates.stages
    Examples: SELinuxMount
      | gate | stage | default |
      | SELinuxMount | BETA | false |

    @rule:orchlet.gate.WatchCacheInitializationPostStartHook @rule:versioning.gates.stages
    Examples: WatchCacheInitializationPostStartHook
      | gate | stage | default |
      | WatchCacheInitializationPostStartHook | BETA | false |

    @rule:orchlet.gate.WatchListClient @rule:versioning.gates.stages
    Examples: WatchListClient
      | gate | stage | default |
      | WatchListClient | BETA | false |

    @rule:orchlet.gate.APIResponseCompression @rule:versioning.gates.stages
    Examples: APIResponseCompression
      | gate | stage | default |
      | APIResponseCompression | BETA | true |

    @rule:orchlet.gate.APIServerIdentity @rule:versioning.gates.stages
    Examples: APIServerIdentity
      | gate | stage | default |
      | APIServerIdentity | BETA | true |

    @rule:orchlet.gate.AllowParsingUserUIDFromCertAuth @rule:versioning.gates.stages
    Examples: AllowParsingUserUIDFromCertAuth
      | gate | stage | default |
      | AllowParsingUserUIDFromCertAuth | BETA | true |

    @rule:orchlet.gate.CPUManagerPolicyBetaOptions @rule:versioning.gates.stages
    Examples: CPUManagerPolicyBetaOptions
      | gate | stage | default |
      | CPUManagerPolicyBetaOptions | BETA | true |

    @rule:orchlet.gate.ContainerCheckpoint @rule:versioning.gates.stages
    Examples: ContainerCheckpoint
      | gate | stage | default |
      | ContainerCheckpoint | BETA | true |

    @rule:orchlet.gate.ContextualLogging @rule:versioning.gates.stages
    Examples: ContextualLogging
      | gate | stage | default |
      | ContextualLogging | BETA | true |

    @rule:orchlet.gate.DRAAdminAccess @rule:versioning.gates.stages
    Examples: DRAAdminAccess
      | gate | stage | default |
      | DRAAdminAccess | BETA | true |

    @rule:orchlet.gate.DRAPrioritizedList @rule:versioning.gates.stages
    Examples: DRAPrioritizedList
      | gate | stage | default |
      | DRAPrioritizedList | BETA | true |

    @rule:orchlet.gate.DRAResourceClaimDeviceStatus @rule:versioning.gates.stages
    Examples: DRAResourceClaimDeviceStatus
      | gate | stage | default |
      | DRAResourceClaimDeviceStatus | BETA | true |

    @rule:orchlet.gate.DRASchedulerFilterTimeout @rule:versioning.gates.stages
    Examples: DRASchedulerFilterTimeout
      | gate | stage | default |
      | DRASchedulerFilterTimeout | BETA | true |

    @rule:orchlet.gate.DeclarativeValidation @rule:versioning.gates.stages
    Examples: DeclarativeValidation
      | gate | stage | default |
      | DeclarativeValidation | BETA | true |

    @rule:orchlet.gate.DetectCacheInconsistency @rule:versioning.gates.stages
    Examples: DetectCacheInconsistency
      | gate | stage | default |
      | DetectCacheInconsistency | BETA | true |

    @rule:orchlet.gate.DisableCPUQuotaWithExclusiveCPUs @rule:versioning.gates.stages
    Examples: DisableCPUQuotaWithExclusiveCPUs
      | gate | stage | default |
      | DisableCPUQuotaWithExclusiveCPUs | BETA | true |

    @rule:orchlet.gate.ExternalServiceAccountTokenSigner @rule:versioning.gates.stages
    Examples: ExternalServiceAccountTokenSigner
      | gate | stage | default |
      | ExternalServiceAccountTokenSigner | BETA | true |

    @rule:orchlet.gate.GracefulNodeShutdown @rule:versioning.gates.stages
    Examples: GracefulNodeShutdown
      | gate | stage | default |
      | GracefulNodeShutdown | BETA | true |

    @rule:orchlet.gate.GracefulNodeShutdownBasedOnPodPriority @rule:versioning.gates.stages
    Examples: GracefulNodeShutdownBasedOnPodPriority
      | gate | stage | default |
      | GracefulNodeShutdownBasedOnPodPriority | BETA | true |

    @rule:orchlet.gate.ImageMaximumGCAge @rule:versioning.gates.stages
    Examples: ImageMaximumGCAge
      | gate | stage | default |
      | ImageMaximumGCAge | BETA | true |

    @rule:orchlet.gate.InOrderInformers @rule:versioning.gates.stages
    Examples: InOrderInformers
      | gate | stage | default |
      | InOrderInformers | BETA | true |

    @rule:orchlet.gate.InPlacePodVerticalScaling @rule:versioning.gates.stages
    Examples: InPlacePodVerticalScaling
      | gate | stage | default |
      | InPlacePodVerticalScaling | BETA | true |

    @rule:orchlet.gate.JobManagedBy @rule:versioning.gates.stages
    Examples: JobManagedBy
      | gate | stage | default |
      | JobManagedBy | BETA | true |

    @rule:orchlet.gate.OrchletFineGrainedAuthz @rule:versioning.gates.stages
    Examples: OrchletFineGrainedAuthz
      | gate | stage | default |
      | OrchletFineGrainedAuthz | BETA | true |

    @rule:orchlet.gate.OrchletPSI @rule:versioning.gates.stages
    Examples: OrchletPSI
      | gate | stage | default |
      | OrchletPSI | BETA | true |

    @rule:orchlet.gate.OrchletPodResourcesDynamicResources @rule:versioning.gates.stages
    Examples: OrchletPodResourcesDynamicResources
      | gate | stage | default |
      | OrchletPodResourcesDynamicResources | BETA | true |

    @rule:orchlet.gate.OrchletPodResourcesGet @rule:versioning.gates.stages
    Examples: OrchletPodResourcesGet
      | gate | stage | default |
      | OrchletPodResourcesGet | BETA | true |

    @rule:orchlet.gate.OrchletSeparateDiskGC @rule:versioning.gates.stages
    Examples: OrchletSeparateDiskGC
      | gate | stage | default |
      | OrchletSeparateDiskGC | BETA | true |

    @rule:orchlet.gate.OrchletServiceAccountTokenForCredentialProviders @rule:versioning.gates.stages
    Examples: OrchletServiceAccountTokenForCredentialProviders
      | gate | stage | default |
      | OrchletServiceAccountTokenForCredentialProviders | BETA | true |

    @rule:orchlet.gate.ListFromCacheSnapshot @rule:versioning.gates.stages
    Examples: ListFromCacheSnapshot
      | gate | stage | default |
      | ListFromCacheSnapshot | BETA | true |

    @rule:orchlet.gate.LoggingBetaOptions @rule:versioning.gates.stages
    Examples: LoggingBetaOptions
      | gate | stage | default |
      | LoggingBetaOptions | BETA | true |

    @rule:orchlet.gate.MatchLabelKeysInPodTopologySpread @rule:versioning.gates.stages
    Examples: MatchLabelKeysInPodTopologySpread
      | gate | stage | default |
      | MatchLabelKeysInPodTopologySpread | BETA | true |

    @rule:orchlet.gate.MatchLabelKeysInPodTopologySpreadSelectorMerge @rule:versioning.gates.stages
    Examples: MatchLabelKeysInPodTopologySpreadSelectorMerge
      | gate | stage | default |
      | MatchLabelKeysInPodTopologySpreadSelectorMerge | BETA | true |

    @rule:orchlet.gate.OpenAPIEnums @rule:versioning.gates.stages
    Examples: OpenAPIEnums
      | gate | stage | default |
      | OpenAPIEnums | BETA | true |

    @rule:orchlet.gate.PodDeletionCost @rule:versioning.gates.stages
    Examples: PodDeletionCost
      | gate | stage | default |
      | PodDeletionCost | BETA | true |

    @rule:orchlet.gate.PodLevelResources @rule:versioning.gates.stages
    Examples: PodLevelResources
      | gate | stage | default |
      | PodLevelResources | BETA | true |

    @rule:orchlet.gate.PodObservedGenerationTracking @rule:versioning.gates.stages
    Examples: PodObservedGenerationTracking
      | gate | stage | default |
      | PodObservedGenerationTracking | BETA | true |

    @rule:orchlet.gate.PodReadyToStartContainersCondition @rule:versioning.gates.stages
    Examples: PodReadyToStartContainersCondition
      | gate | stage | default |
      | PodReadyToStartContainersCondition | BETA | true |

    @rule:orchlet.gate.PortForwardWebsockets @rule:versioning.gates.stages
    Examples: PortForwardWebsockets
      | gate | stage | default |
      | PortForwardWebsockets | BETA | true |

    @rule:orchlet.gate.PreferSameTrafficDistribution @rule:versioning.gates.stages
    Examples: PreferSameTrafficDistribution
      | gate | stage | default |
      | PreferSameTrafficDistribution | BETA | true |

    @rule:orchlet.gate.PreventStaticPodAPIReferences @rule:versioning.gates.stages
    Examples: PreventStaticPodAPIReferences
      | gate | stage | default |
      | PreventStaticPodAPIReferences | BETA | true |

    @rule:orchlet.gate.ProcMountType @rule:versioning.gates.stages
    Examples: ProcMountType
      | gate | stage | default |
      | ProcMountType | BETA | true |

    @rule:orchlet.gate.ReloadOrchletServerCertificateFile @rule:versioning.gates.stages
    Examples: ReloadOrchletServerCertificateFile
      | gate | stage | default |
      | ReloadOrchletServerCertificateFile | BETA | true |

    @rule:orchlet.gate.RemoteRequestHeaderUID @rule:versioning.gates.stages
    Examples: RemoteRequestHeaderUID
      | gate | stage | default |
      | RemoteRequestHeaderUID | BETA | true |

    @rule:orchlet.gate.RotateOrchletServerCertificate @rule:versioning.gates.stages
    Examples: RotateOrchletServerCertificate
      | gate | stage | default |
      | RotateOrchletServerCertificate | BETA | true |

    @rule:orchlet.gate.SELinuxChangePolicy @rule:versioning.gates.stages
    Examples: SELinuxChangePolicy
      | gate | stage | default |
      | SELinuxChangePolicy | BETA | true |

    @rule:orchlet.gate.SELinuxMountReadWriteOncePod @rule:versioning.gates.stages
    Examples: SELinuxMountReadWriteOncePod
      | gate | stage | default |
      | SELinuxMountReadWriteOncePod | BETA | true |

    @rule:orchlet.gate.SchedulerAsyncAPICalls @rule:versioning.gates.stages
    Examples: SchedulerAsyncAPICalls
      | gate | stage | default |
      | SchedulerAsyncAPICalls | BETA | true |

    @rule:orchlet.gate.SchedulerAsyncPreemption @rule:versioning.gates.stages
    Examples: SchedulerAsyncPreemption
      | gate | stage | default |
      | SchedulerAsyncPreemption | BETA | true |

    @rule:orchlet.gate.SchedulerPopFromBackoffQ @rule:versioning.gates.stages
    Examples: SchedulerPopFromBackoffQ
      | gate | stage | default |
      | SchedulerPopFromBackoffQ | BETA | true |

    @rule:orchlet.gate.ServiceAccountNodeAudienceRestriction @rule:versioning.gates.stages
    Examples: ServiceAccountNodeAudienceRestriction
      | gate | stage | default |
      | ServiceAccountNodeAudienceRestriction | BETA | true |

    @rule:orchlet.gate.SizeBasedListCostEstimate @rule:versioning.gates.stages
    Examples: SizeBasedListCostEstimate
      | gate | stage | default |
      | SizeBasedListCostEstimate | BETA | true |

    @rule:orchlet.gate.StorageVersionHash @rule:versioning.gates.stages
    Examples: StorageVersionHash
      | gate | stage | default |
      | StorageVersionHash | BETA | true |

    @rule:orchlet.gate.StructuredAuthenticationConfigurationEgressSelector @rule:versioning.gates.stages
    Examples: StructuredAuthenticationConfigurationEgressSelector
      | gate | stage | default |
      | StructuredAuthenticationConfigurationEgressSelector | BETA | true |

    @rule:orchlet.gate.SupplementalGroupsPolicy @rule:versioning.gates.stages
    Examples: SupplementalGroupsPolicy
      | gate | stage | default |
      | SupplementalGroupsPolicy | BETA | true |

    @rule:orchlet.gate.SystemdWatchdog @rule:versioning.gates.stages
    Examples: SystemdWatchdog
      | gate | stage | default |
      | SystemdWatchdog | BETA | true |

    @rule:orchlet.gate.TokenRequestServiceAccountUIDValidation @rule:versioning.gates.stages
    Examples: TokenRequestServiceAccountUIDValidation
      | gate | stage | default |
      | TokenRequestServiceAccountUIDValidation | BETA | true |

    @rule:orchlet.gate.TopologyManagerPolicyBetaOptions @rule:versioning.gates.stages
    Examples: TopologyManagerPolicyBetaOptions
      | gate | stage | default |
      | TopologyManagerPolicyBetaOptions | BETA | true |

    @rule:orchlet.gate.TranslateStreamCloseWebsocketRequests @rule:versioning.gates.stages
    Examples: TranslateStreamCloseWebsocketRequests
      | gate | stage | default |
      | TranslateStreamCloseWebsocketRequests | BETA | true |

    @rule:orchlet.gate.UnauthenticatedHTTP2DOSMitigation @rule:versioning.gates.stages
    Examples: UnauthenticatedHTTP2DOSMitigation
      | gate | stage | default |
      | UnauthenticatedHTTP2DOSMitigation | BETA | true |

    @rule:orchlet.gate.UserNamespacesSupport @rule:versioning.gates.stages
    Examples: UserNamespacesSupport
      | gate | stage | default |
      | UserNamespacesSupport | BETA | true |

    @rule:orchlet.gate.WatchList @rule:versioning.gates.stages
    Examples: WatchList
      | gate | stage | default |
      | WatchList | BETA | true |

    @rule:orchlet.gate.AltGracefulNodeShutdown @rule:versioning.gates.stages
    Examples: AltGracefulNodeShutdown
      | gate | stage | default |
      | AltGracefulNodeShutdown | BETA | true |

  # ImageVolume is a beta gate off by default: without it a pod mounting an image is refused.
  @rule:versioning.gates.all-beta @component:runtime
  Scenario Outline: AllBeta turns on the beta gates that are off by default, as ImageVolume
    Given a container runtime
    And the manifest "models.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: models}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          volumeMounts: [{name: weights, mountPath: /weights}]
        volumes:
        - {name: weights, image: {reference: "weights:1"}}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s <gates>"
    Then the agent reports pod "models" <outcome>

    Examples:
      | gates                                          | outcome                            |
      | --feature-gates=AllBeta=true                   | Running                            |
      | --feature-gates=ImageVolume=true               | Running                            |
      |                                                | rejected with "UnsupportedPodSpec" |
      | --feature-gates=AllBeta=true,ImageVolume=false | rejected with "UnsupportedPodSpec" |

  @rule:versioning.gates.all-beta @component:runtime
  Scenario: Under AllBeta the image volume reaches the runtime as a read-only image mount
    Given a container runtime
    And the manifest "models.yaml":
      """
      apiVersion: v1
      kind: Pod
      metadata: {name: models}
      spec:
        containers:
        - name: app
          image: "busybox:1.36"
          volumeMounts: [{name: weights, mountPath: /weights}]
        volumes:
        - {name: weights, image: {reference: "weights:1"}}
      """
    When the agent runs with "--pod-manifest-path={manifests} --file-check-frequency=1s --feature-gates=AllBeta=true"
    Then the runtime's container "app" of pod "models" mounts the image "weights:1" read-only at "/weights"

  @rule:versioning.gates.all-alpha
  Scenario: AllAlpha turns on the alpha gate an option needs
    When the agent starts with "--feature-gates=AllAlpha=true --qos-reserved=memory=50%"
    Then it starts

  @rule:orchlet.option.feature-gates.unknown
  Scenario: an unknown gate is refused
    When the agent starts with "--feature-gates=NoSuchGate=true"
    Then it refuses to start naming "--feature-gates"
