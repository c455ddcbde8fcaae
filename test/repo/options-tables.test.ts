import { describe, it } from 'mocha';
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { readDoc, ROOT, section } from './markdown';
import { DEFAULTS } from '../../packages/eventrelay/src/client/options';
import { WEBHOOK_DEFAULTS } from '../../packages/eventrelay/src/webhooks/options';
import { DESTINATION_DEFAULTS } from '../../packages/forwarder/src/delivery/options';

/** The member names of an interface, read from its declaration. */
function members(file: string, name: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest);
  const found: string[] = [];
  source.forEachChild((node) => {
    if (ts.isInterfaceDeclaration(node) && node.name.text === name) {
      for (const member of node.members) if (member.name && ts.isIdentifier(member.name)) found.push(member.name.text);
    }
  });
  expect(found, `interface ${name} in ${file}`).to.not.be.empty;
  return found;
}

/** An options table (`| option | default | ... |`): each option its row names, with that row's default cell. */
function optionsTable(text: string): Map<string, string> {
  const rows = new Map<string, string>();
  for (const line of text.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    if (cells.length < 4 || !cells[1]!.startsWith('`')) continue;
    for (const [, name] of cells[1]!.matchAll(/`(\w+)`/g)) rows.set(name!, cells[2]!);
  }
  return rows;
}

/** The first table of a section. */
function firstTable(text: string): string {
  const lines = text.split('\n');
  const start = lines.findIndex((line) => line.startsWith('|'));
  const end = lines.findIndex((line, i) => i > start && !line.startsWith('|'));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

/** Every default of `defaults` is shown in its row, as `value` (a string also as `'value'`). */
function expectDefaults(table: Map<string, string>, defaults: Readonly<Record<string, unknown>>, where: string): void {
  for (const [key, value] of Object.entries(defaults)) {
    const cell = table.get(key) ?? '';
    const shown = [`\`${String(value)}\``, ...(typeof value === 'string' ? [`\`'${value}'\``] : [])];
    expect(shown.some((s) => cell.includes(s)), `${where}: the default of ${key} is ${shown[0]}, the table says ${cell}`).to.equal(true);
  }
}

describe('options tables in the package READMEs and the references in docs/', function () {
  this.timeout(60_000);

  /** The SDK's reference (moved out of its README, issue 41): the options of Analytics and of the receiver. */
  const sdkReference = readDoc('docs/sdk-reference.md');
  const forwarder = readDoc('packages/forwarder/README.md');
  /** The forwarder's reference (moved out of its README, issue 41): the config file, createForwarder, WebhookDestination. */
  const forwarderReference = readDoc('docs/forwarder-reference.md');

  it('Analytics: a row for every option of AnalyticsOptions, with its default', () => {
    const table = optionsTable(firstTable(section(sdkReference, '### `Analytics`')));
    expect([...table.keys()].sort()).to.deep.equal(members('packages/eventrelay/src/client/options.ts', 'AnalyticsOptions').sort());
    expectDefaults(table, DEFAULTS, 'Analytics');
  });

  it('the webhook receiver: a row for every option of the adapters, with its default', () => {
    const table = optionsTable(firstTable(section(sdkReference, '### Webhook receiver')));
    const options = [
      ...members('packages/eventrelay/src/webhooks/options.ts', 'WebhookReceiverOptions'),
      ...members('packages/eventrelay/src/webhooks/adapters/fastify.ts', 'FastifyWebhookOptions'),
    ];
    expect([...table.keys()].sort()).to.deep.equal(options.sort());
    expectDefaults(table, WEBHOOK_DEFAULTS, 'the receiver');
  });

  it('WebhookDestination: a row for every option, with its default', () => {
    const table = optionsTable(firstTable(section(forwarderReference, '## `WebhookDestination`')));
    expect([...table.keys()].sort()).to.deep.equal(members('packages/forwarder/src/delivery/options.ts', 'WebhookDestinationOptions').sort());
    expectDefaults(table, DESTINATION_DEFAULTS, 'WebhookDestination');
  });

  it('the eventrelay command: a row for every usage line of `eventrelay --help`, as it is written there', () => {
    const help = execFileSync(process.execPath, ['--import', 'tsx', '--conditions=eventrelay-source', join(ROOT, 'packages/forwarder/src/cli/cli.ts'), '--help'], { encoding: 'utf8' });
    const usage = [...help.matchAll(/^ {2}(eventrelay [a-z]+ .*)$/gm)].map((m) => m[1]!.trim());
    const rows = [...section(forwarder, '## Command line').matchAll(/^\| `(eventrelay [a-z]+ [^`]*)` \|/gm)].map((m) => m[1]!);
    expect(usage.length).to.be.above(1);
    expect(rows).to.deep.equal(usage);
  });
});
