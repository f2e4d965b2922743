/**
 * A small reader for zip files (a .vsix is one): the central directory, then each entry's
 * data, stored or deflated. Enough to read the packaged manifest without an unzip program.
 */
import { inflateRawSync } from 'node:zlib';

const END_OF_CENTRAL_DIRECTORY = 0x06054b50;
const CENTRAL_FILE_HEADER = 0x02014b50;
const LOCAL_FILE_HEADER = 0x04034b50;

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  localHeader: number;
}

function findEndOfCentralDirectory(zip: Buffer): number {
  // the record is 22 bytes plus a comment of at most 65535
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === END_OF_CENTRAL_DIRECTORY) {
      return i;
    }
  }
  throw new Error('not a zip file: no end of central directory');
}

export function zipEntries(zip: Buffer): ZipEntry[] {
  const end = findEndOfCentralDirectory(zip);
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (zip.readUInt32LE(at) !== CENTRAL_FILE_HEADER) {
      throw new Error(`bad central directory entry at ${at}`);
    }
    const nameLength = zip.readUInt16LE(at + 28);
    const extraLength = zip.readUInt16LE(at + 30);
    const commentLength = zip.readUInt16LE(at + 32);
    entries.push({
      method: zip.readUInt16LE(at + 10),
      compressedSize: zip.readUInt32LE(at + 20),
      size: zip.readUInt32LE(at + 24),
      localHeader: zip.readUInt32LE(at + 42),
      name: zip.toString('utf8', at + 46, at + 46 + nameLength),
    });
    at += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

export function readEntry(zip: Buffer, entry: ZipEntry): Buffer {
  const at = entry.localHeader;
  if (zip.readUInt32LE(at) !== LOCAL_FILE_HEADER) {
    throw new Error(`bad local header for ${entry.name}`);
  }
  const start = at + 30 + zip.readUInt16LE(at + 26) + zip.readUInt16LE(at + 28);
  const data = zip.subarray(start, start + entry.compressedSize);
  switch (entry.method) {
    case 0:
      return Buffer.from(data);
    case 8:
      return inflateRawSync(data);
    default:
      throw new Error(`${entry.name}: compression method ${entry.method} is not supported`);
  }
}

/** name → content of every file in the zip. */
export function unzip(zip: Buffer): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  for (const entry of zipEntries(zip)) {
    if (!entry.name.endsWith('/')) {
      const content = readEntry(zip, entry);
      if (content.length !== entry.size) {
        throw new Error(`${entry.name}: expected ${entry.size} bytes, got ${content.length}`);
      }
      out.set(entry.name, content);
    }
  }
  return out;
}
