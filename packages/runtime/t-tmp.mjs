import { parseContract } from './dist/src/policy/session-contract.js';
import { CedarPolicySet } from './dist/src/policy/cedar-authorizer.js';
const ex = { "version": 1,
     "identity": { "tenant": "acme", "principal": "agent-7", "objective": "fix the failing test" },
     "filesystem": { "denyWrite": ["/etc", "/workspace/secret"] },
     "guard": { "maxIdenticalFailures": 20 },
     "policies": [
       "permit(principal, action, resource);",
       "forbid(principal, action == Airlock::Action::\"exec\", resource) when { context.programs.contains(\"rm\") };",
       "@approval(\"required\") permit(principal, action == Airlock::Action::\"exec\", resource) when { context.programs.contains(\"tar\") };",
       "@reason(\"too many failures\") forbid(principal, action, resource) when { context.identicalFailures >= 5 };",
       "forbid(principal, action, resource) when { context.callCount + 9223372036854775000 > 9223372036854775806 };",
     ] };
const set = new CedarPolicySet(parseContract(ex));
for (const r of [
  { tool: 'exec', command: 'ls -la' }, { tool: 'exec', command: 'rm -rf x' }, { tool: 'exec', command: 'tar czf a.tgz x' }, { tool: 'exec', command: 'tar czf a.tgz x && rm x' },
  { tool: 'exec', command: 'eval foo' }, { tool: 'files.read', path: '/etc/passwd' }, { tool: 'files.read', path: '/etc/../x' }, { tool: 'exec', command: 'ls', identicalFailures: 6 },
  { tool: 'exec', command: 'ls', callCount: 1000 }, { tool: 'nope' }, { tool: 'exec', callCount: 1.5 },
]) console.log(JSON.stringify(set.authorize({ sessionId: 's1', ...r })));
const empty = new CedarPolicySet(parseContract({ version: 1, policies: [], enforcement: 'log-only' }));
console.log(JSON.stringify(empty.authorize({ sessionId: 's', tool: 'files.write', path: '/workspace/a' })));
