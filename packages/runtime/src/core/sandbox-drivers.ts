/**
 * The registry of sandbox drivers a control plane offers, by name (the
 * contract's `sandbox`, the CLI's `--sandbox`). Every stored handle and
 * session names its driver; records from before driver spec v2 have none
 * and are gVisor's. The composition root (server.ts) fills the registry;
 * core asks it for the driver of a session or a handle and never names one.
 */
import { AirlockError } from './errors.js';
import type { DriverCapabilities, SandboxDriver, SandboxHandle } from './sandbox-driver.js';

/** The driver of handles and sessions stored before driver spec v2. */
export const LEGACY_DRIVER_NAME = 'gvisor';

/** Drivers by name; the first given is the default. */
export class SandboxDrivers {
  private readonly byName = new Map<string, SandboxDriver>();
  /** the driver of a session whose contract and request name none */
  readonly default: SandboxDriver;

  constructor(drivers: readonly SandboxDriver[]) {
    const [first] = drivers;
    if (!first) throw new AirlockError('INTERNAL', 'a control plane needs at least one sandbox driver');
    for (const driver of drivers) {
      if (this.byName.has(driver.name)) throw new AirlockError('INTERNAL', `two sandbox drivers are named ${driver.name}`);
      this.byName.set(driver.name, driver);
    }
    this.default = first;
  }

  /** Names of every registered driver, default first. */
  names(): string[] {
    return [...this.byName.keys()];
  }

  /** Every registered driver, default first. */
  all(): SandboxDriver[] {
    return [...this.byName.values()];
  }

  /** The driver called `name`; INVALID_ARGUMENTS naming the choices. */
  get(name: string): SandboxDriver {
    const driver = this.byName.get(name);
    if (!driver) {
      throw new AirlockError('INVALID_ARGUMENTS', `no sandbox driver named ${JSON.stringify(name)} on this server; choose one of ${this.names().join(', ')}`, {
        details: { field: 'sandbox', choices: this.names() },
      });
    }
    return driver;
  }

  /** The driver that made a handle (handles without a name are gVisor's). */
  forHandle(handle: Pick<SandboxHandle, 'driver'>): SandboxDriver {
    return this.get(handle.driver ?? LEGACY_DRIVER_NAME);
  }

  /** The driver of a session (sessions without a name are gVisor's). */
  forSession(session: { driver?: string | undefined }): SandboxDriver {
    return this.get(session.driver ?? LEGACY_DRIVER_NAME);
  }
}

/** Throws INVALID_STATE unless the session's driver can do what core is about to rely on. */
export function requireCapability(driver: SandboxDriver, capability: keyof DriverCapabilities, what: string, sessionId: string): void {
  if (driver.capabilities[capability]) return;
  throw new AirlockError('INVALID_STATE', `session ${sessionId} runs on the ${driver.name} driver, which cannot ${what}`, {
    details: { sessionId, driver: driver.name, capability },
  });
}
