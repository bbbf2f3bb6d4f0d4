/**
 * The policy layer: session contracts, shell-command analysis, the
 * filesystem fast path and Cedar authorization. Named exports only.
 */
export { CedarPolicySet } from './cedar-authorizer.js';
export type { AuthorizationRequest, PolicyDecision } from './cedar-authorizer.js';
export { checkPolicySources, POLICY_ID_PATTERN } from './cedar-policy-text.js';
export type { CheckedPolicy, PolicyCheck, PolicySource } from './cedar-policy-text.js';
export { formatIssuePath, invalidContract } from './contract-issues.js';
export type { ContractIssue } from './contract-issues.js';
export { MAX_POLICY_BYTES } from './contract-policies.js';
export type { PolicyFileOptions } from './contract-policies.js';
export { decodeContractText, MAX_CONTRACT_CHARS } from './contract-text.js';
export {
  FILE_TOOL_ACCESS,
  FilesystemPolicy,
  isCanonicalPath,
  isPathWithin,
  normalizeAbsolutePath,
} from './filesystem-policy.js';
export type {
  FileAccess,
  FilesystemCheckOptions,
  FilesystemDecision,
  FilesystemRuleList,
  FilesystemRules,
} from './filesystem-policy.js';
export {
  ACTION_TYPE,
  CEDAR_ACTIONS,
  CEDAR_SCHEMA,
  PRINCIPAL_TYPE,
  RESOURCE_TYPE,
  TOOL_NAMES,
  isToolName,
} from './policy-vocabulary.js';
export type { CedarRequestContext, ToolName } from './policy-vocabulary.js';
export {
  DEFAULT_CONTRACT,
  MAX_POLICIES,
  PERMIT_ALL_POLICY,
  parseContract,
  parseContractText,
  sessionContractSchema,
} from './session-contract.js';
export type {
  ContractBudgets,
  ContractIdentity,
  ContractIdle,
  ContractCredential,
  ContractNetwork,
  ContractParseOptions,
  ContractPolicy,
  ContractResources,
  EnforcementMode,
  SessionContract,
} from './session-contract.js';
export { analyzeCommand, MAX_ANALYSED_COMMAND_LENGTH, MAX_ANALYSIS_DEPTH } from './shell-analysis.js';
export type { CommandAnalysis, CommandInput } from './shell-analysis.js';
