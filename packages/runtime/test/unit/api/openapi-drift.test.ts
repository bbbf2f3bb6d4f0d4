import { test } from 'node:test';
import assert from 'node:assert/strict';
import { committedSdkTypes, generateSdkTypes } from '../../../scripts/generate-sdk-types.js';

test('the SDK types are generated from the current OpenAPI document (run `npm run generate:sdk-types` after changing the API)', async () => {
  assert.equal(committedSdkTypes(), await generateSdkTypes());
});
