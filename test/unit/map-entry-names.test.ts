// Map entry types in the descriptors reflection serves: named as protoc names them, so strict readers
// (grpcurl through Go's protodesc) accept the files.
import assert from 'node:assert/strict';
import path from 'node:path';
import * as protoLoader from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';
import { fixMapEntryNames, mapEntryName, withMapEntryNames } from '../../src/api/map-entry-names.js';
import { protoRoot } from '../../src/proto.js';

interface Msg {
  name: string;
  field: { name: string; typeName?: string }[];
  nestedType: Msg[];
  options?: { mapEntry?: boolean };
}

/** The messages of an encoded FileDescriptorProto. */
const messages = (encoded: Uint8Array) => (descriptor.FileDescriptorProto.decode(encoded) as unknown as { messageType: Msg[] }).messageType;

describe('map entry names (reflection descriptors)', () => {
  it('names the entry type of a map field as protoc does', () => {
    assert.equal(mapEntryName('images'), 'ImagesEntry');
    assert.equal(mapEntryName('foo_bar_baz'), 'FooBarBazEntry');
    assert.equal(mapEntryName('fooBar'), 'FooBarEntry');
    assert.equal(mapEntryName('a__b'), 'ABEntry');
  });

  it('renames the entry types of the agent proto and points their fields at them; the input definition is untouched', () => {
    const def = protoLoader.loadSync(path.join(protoRoot(), 'inplace/v1/agent.proto'), { keepCase: true, includeDirs: [protoRoot()] });
    const files = (def['inplace.v1.RestartRequest'] as { fileDescriptorProtos: Buffer[] }).fileDescriptorProtos;
    const original = files.map((f) => Buffer.from(f));
    const agentFile = (list: Buffer[]) => list.find((f) => messages(f).some((m) => m.name === 'RestartRequest'))!;
    const before = messages(agentFile(files)).find((m) => m.name === 'RestartRequest')!;
    assert.deepEqual(before.nestedType.map((n) => n.name), ['Images'], 'protobufjs names it after the field (what this fixes)');

    const fixed = fixMapEntryNames(def);
    const after = messages(agentFile((fixed['inplace.v1.RestartRequest'] as { fileDescriptorProtos: Buffer[] }).fileDescriptorProtos)).find((m) => m.name === 'RestartRequest')!;
    assert.deepEqual(after.nestedType.map((n) => [n.name, n.options?.mapEntry]), [['ImagesEntry', true]]);
    assert.equal(after.field.find((f) => f.name === 'images')!.typeName, '.inplace.v1.RestartRequest.ImagesEntry');
    assert.deepEqual(files, original, 'the definition given is not changed');
  });

  it('leaves messages without maps and nested non-map types as they were, fixing maps inside nested types', () => {
    const file = descriptor.FileDescriptorProto.encode({
      name: 'x.proto',
      package: 'p',
      messageType: [
        { name: 'Plain', field: [{ name: 'n', number: 1, type: 9 }] },
        {
          name: 'Outer',
          field: [{ name: 'inner', number: 1, type: 11, typeName: 'Inner' }],
          nestedType: [
            {
              name: 'Inner',
              field: [{ name: 'by_key', number: 1, type: 11, label: 3, typeName: 'By_key' }],
              nestedType: [{ name: 'By_key', options: { mapEntry: true }, field: [{ name: 'key', number: 1, type: 9 }, { name: 'value', number: 2, type: 9 }] }],
            },
          ],
        },
      ],
    } as never).finish();
    const [plain, outer] = messages(withMapEntryNames(file));
    assert.deepEqual(plain.field.map((f) => [f.name, f.typeName ?? '']), [['n', '']]);
    assert.equal(outer.field[0].typeName, 'Inner', 'a field of a nested message type keeps its reference');
    const inner = outer.nestedType[0];
    assert.equal(inner.nestedType[0].name, 'ByKeyEntry');
    assert.equal(inner.field[0].typeName, '.p.Outer.Inner.ByKeyEntry');
  });
});
