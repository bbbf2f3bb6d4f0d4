/**
 * Generates the SDK's API types from the server's OpenAPI document.
 *   node packages/runtime/dist/scripts/generate-sdk-types.js --write
 * The test `openapi-drift.test.ts` fails when the committed file differs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import openapiTS, { astToString } from 'openapi-typescript';
import { openApiDocument } from '../src/api/openapi.js';

/** Where the generated types live in the SDK. */
export const SDK_TYPES_PATH = fileURLToPath(new URL('../../../sdk/src/generated/openapi.ts', import.meta.url));

const HEADER = `/**
 * Generated from the Airlock server's OpenAPI document by
 * packages/runtime/scripts/generate-sdk-types.ts. Do not edit by hand:
 * change the server's schemas and run \`npm run generate:sdk-types\`.
 */
/* eslint-disable */
`;

/** The generated TypeScript source. */
export async function generateSdkTypes(): Promise<string> {
  const document = openApiDocument('generated') as unknown as Parameters<typeof openapiTS>[0];
  const ast = await openapiTS(document, { alphabetize: true });
  return `${HEADER}${astToString(ast)}`;
}

/** The committed source. */
export function committedSdkTypes(): string {
  return readFileSync(SDK_TYPES_PATH, 'utf8');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1] && process.argv.includes('--write')) {
  writeFileSync(SDK_TYPES_PATH, await generateSdkTypes());
  process.stdout.write(`wrote ${SDK_TYPES_PATH}\n`);
}
