/** The contract example from the policy-layer brief, shared by the policy tests. */
export const EXAMPLE_CONTRACT = {
  version: 1,
  identity: { tenant: 'acme', principal: 'agent-7', objective: 'fix the failing test' },
  filesystem: { denyWrite: ['/etc', '/workspace/secret'] },
  guard: { maxIdenticalFailures: 20 },
  policies: [
    'permit(principal, action, resource);',
    'forbid(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("rm") };',
    '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };',
  ],
} as const;

/** The same example as YAML. */
export const EXAMPLE_CONTRACT_YAML = `
version: 1
identity:
  tenant: acme
  principal: agent-7
  objective: fix the failing test
filesystem:
  denyWrite: [/etc, /workspace/secret]
guard:
  maxIdenticalFailures: 20
policies:
  - permit(principal, action, resource);
  - 'forbid(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("rm") };'
  - '@approval("required") permit(principal, action == Airlock::Action::"exec", resource) when { context.programs.contains("tar") };'
`;
