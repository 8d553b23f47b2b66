"""The settings of the `gcp` provider a stack file may set (`gcp:<key>`): every other `gcp:` key is a mistake (a
project key put under the provider's namespace, such as `gcp:storage`, is otherwise silently ignored)."""

from __future__ import annotations

# Every key pulumi-gcp 10.2.0 reads from its config namespace: the `__config__.get*('<key>')` calls of
# pulumi_gcp/config/vars.py (tests/test_config_inputs.py compares this list with the installed package).
GCP_PROVIDER_SETTINGS = (
    "accessToken", "addPulumiAttributionLabel", "batching", "billingProject", "credentials", "defaultLabels",
    "deletionPolicy", "disableGlobalProjectWarning", "disableGooglePartnerName", "externalCredentials",
    "googlePartnerName", "impersonateServiceAccount", "impersonateServiceAccountDelegates", "pollInterval",
    "preferGlobalEndpoints", "preferRegionalEndpoints", "project", "pulumiAttributionLabelAdditionStrategy",
    "region", "requestReason", "requestTimeout", "scopes", "skipRegionValidation", "universeDomain",
    "userProjectOverride", "zone",
)
# <service>CustomEndpoint keys, one per service the provider knows.
_CUSTOM_ENDPOINT_SERVICES = (
    "accessApproval", "accessContextManager", "activeDirectory", "agentIdentity", "agentRegistry",
    "agenticApplications", "alloydb", "apiGateway", "apigee", "apihub", "apikeys", "appEngine", "apphub",
    "artifactRegistry", "assuredWorkloads", "backupDr", "beyondcorp", "bigQuery", "biglake", "biglakeHive",
    "biglakeIceberg", "bigqueryAnalyticsHub", "bigqueryConnection", "bigqueryDataTransfer", "bigqueryDatapolicy",
    "bigqueryDatapolicyv2", "bigqueryReservation", "bigtable", "billingBudgets", "billing", "binaryAuthorization",
    "blockchainNodeEngine", "certificateManager", "ces", "chronicle", "cloudAsset", "cloudBilling", "cloudBuild",
    "cloudFunctions", "cloudIdentity", "cloudIds", "cloudQuotas", "cloudResourceManager", "cloudRun", "cloudRunV2",
    "cloudScheduler", "cloudSecurityCompliance", "cloudSupport", "cloudTasks", "cloudbuildv2", "clouddeploy",
    "clouddomains", "cloudfunctions2", "colab", "composer", "compute", "config", "contactCenterInsights",
    "containerAnalysis", "containerAttached", "containerAws", "containerAzure", "container", "coreBilling",
    "dataCatalog", "dataFusion", "dataLineage", "dataLossPrevention", "dataPipeline", "databaseMigrationService",
    "dataflow", "dataform", "dataplex", "dataproc", "dataprocGdc", "dataprocMetastore", "datastream",
    "deploymentManager", "developerConnect", "dialogflow", "dialogflowCx", "discoveryEngine", "dns", "documentAi",
    "documentAiWarehouse", "edgecontainer", "edgenetwork", "essentialContacts", "eventarc", "filestore",
    "firebaseAiLogic", "firebaseAppCheck", "firebaseAppHosting", "firebase", "firebaseDataConnect",
    "firebaseDatabase", "firebaseExtensions", "firebaseHosting", "firebaseRemoteConfig", "firebaseStorage",
    "firebaserules", "firestore", "gemini", "geminiDataAnalytics", "gkeBackup", "gkeHub2", "gkeHub", "gkeonprem",
    "healthcare", "hypercomputecluster", "iam2", "iam3", "iamBeta", "iamCredentials", "iam", "iamWorkforcePool",
    "iap", "identityPlatform", "integrationConnectors", "integrations", "kms", "licenseManager", "logging",
    "looker", "lustre", "managedKafka", "memcache", "memorystore", "migrationCenter", "modelArmor",
    "modelArmorGlobal", "monitoring", "netapp", "networkConnectivity", "networkConnectivityv1", "networkManagement",
    "networkManagementv1", "networkSecurity", "networkServices", "observability", "oracleDatabase", "orgPolicy",
    "osConfig", "osConfigV2", "osLogin", "parallelstore", "parameterManager", "parameterManagerRegional",
    "privateca", "privilegedAccessManager", "publicCa", "pubsub", "pubsubLite", "recaptchaEnterprise", "redis",
    "resourceManager3", "resourceManager", "resourceManagerV3", "runtimeConfig", "runtimeconfig", "saasRuntime",
    "secretManager", "secretManagerRegional", "secureSourceManager", "securityCenter", "securityCenterManagement",
    "securityCenterV2", "securityScanner", "securityposture", "serviceDirectory", "serviceManagement",
    "serviceNetworking", "serviceUsage", "serviceUsageV2", "siteVerification", "sourceRepo", "spanner", "sql",
    "storageBatchOperations", "storageControl", "storage", "storageFtp", "storageInsights", "storageTransfer",
    "tags", "tagsLocation", "tpuV2", "transcoder", "vectorSearch", "vertexAiAad", "vertexAi", "vmwareengine",
    "vpcAccess", "workbench", "workflows", "workloadIdentity", "workstations",
)
GCP_PROVIDER_KEYS = frozenset(GCP_PROVIDER_SETTINGS) | {f"{s}CustomEndpoint" for s in _CUSTOM_ENDPOINT_SERVICES}
