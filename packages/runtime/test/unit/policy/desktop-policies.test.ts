/** Cedar policies over desktop calls: the context keys are in the schema, and decide as written. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CedarPolicySet, type AuthorizationRequest } from '../../../src/policy/cedar-authorizer.js';
import { parseContract } from '../../../src/policy/session-contract.js';
import { NO_DESKTOP_CONTEXT } from '../../../src/core/authorizer.js';

const POLICIES = [
  'permit(principal, action, resource);',
  { id: 'no-typing-into-banks', text: 'forbid(principal, action == Airlock::Action::"desktop.act", resource) when { context.desktopAction == "type" && context.windowTitle like "*Bank*" };' },
  { id: 'top-strip-needs-a-human', text: '@approval("required") permit(principal, action == Airlock::Action::"desktop.act", resource) when { context.desktopAction == "click" && context.y < 40 };' },
  { id: 'no-screenshots-of-secrets', text: 'forbid(principal, action == Airlock::Action::"desktop.screenshot", resource) when { context.windowTitle like "*Secret*" };' },
];
const set = new CedarPolicySet(parseContract({ version: 1, policies: POLICIES }));

function act(desktop: Partial<typeof NO_DESKTOP_CONTEXT>): AuthorizationRequest {
  return { sessionId: 'ses_1', tool: 'desktop.act', desktop: { ...NO_DESKTOP_CONTEXT, ...desktop } };
}

test('typing is denied by the focused window\'s title, and the reason names the window', () => {
  const decision = set.authorize(act({ action: 'type', text: 'x', windowTitle: 'My Bank - Chromium' }));
  assert.equal(decision.decision, 'deny');
  assert.deepEqual(decision.policyIds, ['no-typing-into-banks']);
  assert.equal(decision.reason, 'policy no-typing-into-banks forbids desktop.act: type in window "My Bank - Chromium"');
  assert.equal(set.authorize(act({ action: 'type', text: 'x', windowTitle: 'Notes' })).decision, 'allow');
});

test('a click is held by its coordinates', () => {
  const held = set.authorize(act({ action: 'click', x: 100, y: 10, windowTitle: 'Notes' }));
  assert.equal(held.decision, 'ask');
  assert.equal(held.reason, 'policy top-strip-needs-a-human requires approval for desktop.act: click at (100, 10) in window "Notes"');
  assert.equal(set.authorize(act({ action: 'click', x: 100, y: 300 })).decision, 'allow');
});

test('screenshots are their own action, with the window title', () => {
  const request: AuthorizationRequest = { sessionId: 'ses_1', tool: 'desktop.screenshot', desktop: { ...NO_DESKTOP_CONTEXT, action: 'screenshot', windowTitle: 'Secret plans' } };
  assert.equal(set.authorize(request).decision, 'deny');
});

test('other tools see empty desktop keys, and a typo in a desktop key is a contract error', () => {
  const exec = set.authorize({ sessionId: 'ses_1', tool: 'exec', command: 'ls', desktop: { ...NO_DESKTOP_CONTEXT, action: 'type', windowTitle: 'Bank' } });
  assert.equal(exec.decision, 'allow', 'an exec never carries desktop keys');
  assert.throws(() => parseContract({ version: 1, policies: ['permit(principal, action, resource) when { context.windowtitle == "x" };'] }), { code: 'INVALID_CONTRACT' });
});

test('the contract sizes the display within bounds', () => {
  assert.deepEqual(parseContract({ version: 1 }).desktop, { width: 1280, height: 800 });
  assert.deepEqual(parseContract({ version: 1, desktop: { width: 1920, height: 1080 } }).desktop, { width: 1920, height: 1080 });
  assert.throws(() => parseContract({ version: 1, desktop: { width: 100 } }), /desktop.width/);
});
