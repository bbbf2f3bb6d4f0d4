/**
 * The agents of the driver's sandboxes: one endpoint per incarnation, the
 * connection each call uses, and what the driver does when an agent does
 * not answer. A sandbox found after a restart of the control plane is
 * adopted: its endpoint listens again on the same socket path and the agent,
 * which retries with a backoff, reconnects (at once when woken by SIGUSR1).
 *
 * An agent that does not answer is woken (SIGUSR1: parked or retrying) and
 * continued (SIGCONT: `kill -STOP 1` inside the sandbox stops it, measured);
 * if it still does not answer, calls fail with SANDBOX_NOT_ANSWERING and
 * `health` says so, while `status` may still say running.
 */
import { AirlockError } from '../../core/errors.js';
import type { SandboxHandle, SandboxHealth, SandboxListing } from '../../core/sandbox-driver.js';
import type { AgentConnection } from '../agent/agent-connection.js';
import { AgentEndpoint } from './agent-endpoint.js';
import type { Runsc } from './runsc.js';
import { AGENT_INIT } from './sandbox-markers.js';

/** How long a running sandbox's agent may take to (re)connect before it is revived. */
const RECONNECT_TIMEOUT_MS = 3_000;
const PING_TIMEOUT_MS = 2_000;
const PARK_TIMEOUT_MS = 5_000;

/** What the agents need to know of the driver. */
export interface SandboxAgentsHost {
  runsc: Runsc;
  containerIdOf(sandboxId: string): string;
  status(handle: SandboxHandle): Promise<SandboxListing['status'] | 'missing'>;
  /** SANDBOX_DIED with the cause, for a sandbox found dead */
  died(handle: SandboxHandle, status: string): Promise<AirlockError>;
  stateDirOf(handle: SandboxHandle): string;
}

/** Endpoints and connections of every sandbox this driver process knows. */
export class SandboxAgents {
  private readonly endpoints = new Map<string, Promise<AgentEndpoint>>();

  constructor(private readonly host: SandboxAgentsHost) {}

  /** A new endpoint, listening before its sandbox starts or is restored. */
  async open(sandboxId: string, stateDir: string): Promise<AgentEndpoint> {
    const endpoint = new AgentEndpoint(stateDir, sandboxId);
    this.endpoints.set(sandboxId, Promise.resolve(endpoint));
    await endpoint.listen();
    await AGENT_INIT.put(stateDir);
    return endpoint;
  }

  /** Waits for the first hello of a sandbox just started or restored; a restore's wakeup is helped by SIGUSR1 after `kickAfterMs`. */
  async first(handle: SandboxHandle, timeoutMs: number, kickAfterMs: number): Promise<AgentConnection> {
    const endpoint = await this.endpointOf(handle);
    const connection = await endpoint.waitForAgent(timeoutMs, () => this.kick(handle), kickAfterMs);
    if (connection) return connection;
    const status = await this.host.status(handle);
    if (status !== 'running') throw await this.host.died(handle, status);
    throw new AirlockError('SANDBOX_NOT_ANSWERING', `the agent of sandbox ${handle.sandboxId} did not connect within ${timeoutMs} ms of its start`, {
      details: { reason: 'no-hello', sandboxId: handle.sandboxId },
    });
  }

  /** The live connection of a running sandbox; adopts, wakes or revives its agent as needed. */
  async connectionOf(handle: SandboxHandle): Promise<AgentConnection> {
    const endpoint = await this.endpointOf(handle);
    const live = endpoint.current();
    if (live) return live;
    await this.requireRunning(handle);
    const connection =
      (await endpoint.waitForAgent(RECONNECT_TIMEOUT_MS, () => this.kick(handle), 0)) ?? ((await this.revive(handle)) ? endpoint.current() : undefined);
    if (connection) return connection;
    await this.requireRunning(handle);
    throw this.notAnswering(handle, 'no-agent');
  }

  /** Continues a stopped agent and wakes a parked or retrying one; true when it answers a ping afterwards. */
  async revive(handle: SandboxHandle): Promise<boolean> {
    const containerId = this.host.containerIdOf(handle.sandboxId);
    await this.host.runsc.run(['kill', containerId, 'CONT'], { timeoutMs: 10_000 }).catch(() => undefined);
    const endpoint = await this.endpointOf(handle);
    const connection = endpoint.current() ?? (await endpoint.waitForAgent(PING_TIMEOUT_MS, () => this.kick(handle), 0));
    if (!connection) return false;
    try {
      await connection.ping(PING_TIMEOUT_MS);
      return true;
    } catch {
      // A connection whose agent never answers is worse than none: the agent reconnects if it can.
      connection.close('the agent did not answer a ping');
      return false;
    }
  }

  /** Whether the command slot of a live sandbox answers. */
  async health(handle: SandboxHandle): Promise<SandboxHealth> {
    const status = await this.host.status(handle);
    if (status !== 'running') return { answering: false, reason: status };
    let endpoint: AgentEndpoint;
    try {
      endpoint = await this.endpointOf(handle);
    } catch (error) {
      return { answering: false, reason: error instanceof AirlockError && error.code === 'SANDBOX_INCOMPATIBLE' ? 'incompatible' : 'no-agent' };
    }
    const connection = endpoint.current() ?? (await endpoint.waitForAgent(1_000, () => this.kick(handle), 0));
    if (connection) {
      try {
        const pong = await connection.ping(PING_TIMEOUT_MS);
        return { answering: true, latencyMs: Math.round(pong.latencyMs * 100) / 100 };
      } catch {
        // stopped, or wedged: try once to bring it back
      }
    }
    if (await this.revive(handle)) return { answering: true, repaired: 'woke or continued the agent (it was parked, retrying or stopped)' };
    return { answering: false, reason: connection ? 'timeout' : 'no-agent' };
  }

  /**
   * Before a checkpoint: nothing listens any more, then the agent closes its
   * connection and waits. On failure the endpoint listens again.
   */
  async park(handle: SandboxHandle): Promise<void> {
    const connection = await this.connectionOf(handle);
    const endpoint = await this.endpointOf(handle);
    await endpoint.stopListening();
    try {
      await connection.park(PARK_TIMEOUT_MS);
    } catch (error) {
      await endpoint.listen();
      throw error;
    }
  }

  /** After a checkpoint that left the sandbox running (or failed): listen and wake the parked agent. */
  async unpark(handle: SandboxHandle): Promise<void> {
    const endpoint = await this.endpointOf(handle);
    await endpoint.listen();
    await endpoint.waitForAgent(PARK_TIMEOUT_MS, () => this.kick(handle), 0);
  }

  /** Asks a connected agent to end its machine (see AgentConnection.shutdown); false when none answered. */
  async shutdown(sandboxId: string): Promise<boolean> {
    const endpoint = await this.endpoints.get(sandboxId)?.catch(() => undefined);
    const connection = endpoint?.current();
    return connection ? connection.shutdown(1_000) : false;
  }

  /** Forgets a sandbox: closes its listener and connection. */
  async close(sandboxId: string): Promise<void> {
    const endpoint = this.endpoints.get(sandboxId);
    this.endpoints.delete(sandboxId);
    if (endpoint) await (await endpoint.catch(() => undefined))?.close();
  }

  /** Forgets every sandbox of this process (the control plane stops): their agents retry until a new driver adopts them. */
  async closeAll(): Promise<void> {
    for (const sandboxId of [...this.endpoints.keys()]) await this.close(sandboxId);
  }

  /** SIGUSR1 to the agent: reconnect now. */
  private async kick(handle: SandboxHandle): Promise<void> {
    await this.host.runsc.run(['kill', this.host.containerIdOf(handle.sandboxId), 'USR1'], { timeoutMs: 10_000 });
  }

  private endpointOf(handle: SandboxHandle): Promise<AgentEndpoint> {
    let endpoint = this.endpoints.get(handle.sandboxId);
    if (!endpoint) {
      endpoint = this.adopt(handle);
      this.endpoints.set(handle.sandboxId, endpoint);
      endpoint.catch(() => this.endpoints.delete(handle.sandboxId));
    }
    return endpoint;
  }

  /** A sandbox this process did not start: listen on its socket again, if it runs the agent at all. */
  private async adopt(handle: SandboxHandle): Promise<AgentEndpoint> {
    const stateDir = this.host.stateDirOf(handle);
    if (!(await AGENT_INIT.isIn(stateDir))) {
      throw new AirlockError(
        'SANDBOX_INCOMPATIBLE',
        `sandbox ${handle.sandboxId} was started by an older Airlock whose machines had no agent; this version cannot run calls in it. ` +
          `Terminate the session (its files stay reachable until then through \`files\` and \`exec --ephemeral\`), or finish its work with the older version`,
        { details: { sandboxId: handle.sandboxId } },
      );
    }
    const endpoint = new AgentEndpoint(stateDir, handle.sandboxId);
    await endpoint.listen();
    return endpoint;
  }

  private async requireRunning(handle: SandboxHandle): Promise<void> {
    const status = await this.host.status(handle);
    if (status === 'paused') throw new AirlockError('INVALID_STATE', `sandbox ${handle.sandboxId} is paused; unpause it before running commands`);
    if (status !== 'running') throw await this.host.died(handle, status);
  }

  private notAnswering(handle: SandboxHandle, reason: string): AirlockError {
    return new AirlockError(
      'SANDBOX_NOT_ANSWERING',
      `the machine ${handle.sandboxId} runs but its agent does not answer (stopped, wedged or killed); restart the session's machine (processes are lost, files kept) or terminate it`,
      { details: { reason, sandboxId: handle.sandboxId } },
    );
  }
}
