/**
 * The session contract's shape: what one agent session may do and with what
 * resources. The core stores and reads contracts with this type; parsing and
 * validation (zod, Cedar) live in policy/session-contract.ts.
 */
import type { ToolName } from './tool-call.js';

/** The filesystem lists of a contract: absolute, normalized path prefixes. */
export interface FilesystemRules {
  /** readable, never writable */
  readonly readOnly: readonly string[];
  /** neither readable nor writable: hidden from the agent */
  readonly denyRead: readonly string[];
  /** not writable; wins over allowWrite */
  readonly denyWrite: readonly string[];
  /** when present, writes are allowed only under these prefixes (empty: nowhere) */
  readonly allowWrite?: readonly string[];
}

/** Who runs the session, and why. */
export interface ContractIdentity {
  readonly tenant: string;
  readonly principal: string;
  /** the agent software, e.g. "claude-code/2.1" */
  readonly agent?: string;
  readonly objective?: string;
  readonly task?: string;
}

/** Sandbox size. */
export interface ContractResources {
  readonly cpus: number;
  readonly memoryMb: number;
  readonly diskMb: number;
  readonly maxProcesses: number;
  /** ceiling of a live resize; default 4× cpus */
  readonly maxCpus?: number;
  /** ceiling of a live resize; default 4× memoryMb */
  readonly maxMemoryMb?: number;
}

/** Limits of per-call sandboxes (per-call sessions and ephemeral calls). */
export interface ContractPerCall {
  /** a per-call command is killed after this long, whatever timeout the call asked for */
  readonly maxSeconds: number;
}

/** Hard limits over the whole session; absent means unlimited. */
export interface ContractBudgets {
  readonly maxToolCalls?: number;
  readonly maxCpuSeconds?: number;
  readonly maxWallSeconds?: number;
}

/** When an idle session is paused (memory kept) and suspended (to a snapshot). */
export interface ContractIdle {
  readonly pauseAfterSeconds?: number;
  readonly suspendAfterSeconds: number;
  /** never pause or suspend on idleness */
  readonly keepAwake: boolean;
}

/** Egress lists, validated now and enforced by the egress gateway later. */
export interface ContractNetwork {
  readonly allowedDomains?: readonly string[];
  readonly deniedDomains?: readonly string[];
}

/**
 * A secret the egress gateway adds to requests for some hosts; the sandbox
 * only ever sees a placeholder (see docs/network.md).
 */
export interface ContractCredential {
  /** name of a secret stored with `airlock secrets set` */
  readonly secret: string;
  /** domain patterns (as in network.allowedDomains) whose HTTPS requests get the secret */
  readonly hosts: readonly string[];
  /** HTTP request header the gateway sets */
  readonly header: string;
  /** the header's value; `{secret}` stands for the secret */
  readonly format: string;
  /** environment variable holding the placeholder in the sandbox; defaults to the secret's name */
  readonly env?: string;
}

/** Rules for `exec` beyond Cedar. */
export interface ContractExec {
  /**
   * Environment variables that change which code runs (PATH, BASH_ENV, LD_PRELOAD, ...) that a
   * call's `env` may still set; any other such variable is refused (see code-changing-environment.ts)
   */
  readonly allowEnv: readonly string[];
}

/** The display of a desktop session (an image built with `airlock images build --desktop`). */
export interface ContractDesktop {
  readonly width: number;
  readonly height: number;
}

/** One Cedar policy of a parsed contract, with its final id. */
export interface ContractPolicy {
  readonly id: string;
  readonly text: string;
}

/** `enforce` applies decisions; `log-only` computes and records them but lets every call through. */
export type EnforcementMode = 'enforce' | 'log-only';

/** Sandbox drivers a contract may ask for. */
export const SANDBOX_KINDS = ['gvisor', 'microvm'] as const;
/** A sandbox driver a contract may ask for: gVisor's user-space kernel, or a microVM with its own guest kernel. */
export type SandboxKind = (typeof SANDBOX_KINDS)[number];

/** A parsed, defaulted, frozen session contract. */
export interface SessionContract {
  readonly version: 1;
  /** the isolation backend of the session's machines; absent: gvisor (the server's default) */
  readonly sandbox?: SandboxKind;
  readonly identity: ContractIdentity;
  readonly tools: readonly ToolName[];
  readonly filesystem: FilesystemRules;
  readonly exec: ContractExec;
  readonly resources: ContractResources;
  readonly budgets: ContractBudgets;
  readonly guard: { readonly maxIdenticalFailures: number };
  readonly idle: ContractIdle;
  readonly perCall: ContractPerCall;
  readonly desktop: ContractDesktop;
  readonly retention: { readonly snapshotDays?: number };
  readonly enforcement: EnforcementMode;
  /** one entry per Cedar policy; omitted in the input means "permit everything" */
  readonly policies: readonly ContractPolicy[];
  readonly network?: ContractNetwork;
  readonly credentials?: readonly ContractCredential[];
}
