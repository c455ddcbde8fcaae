import { compileTransform, type Transform } from '../../../src/transform/sandbox';

/** The limits a test compiles a transform with. */
export type TransformOptions = Parameters<typeof compileTransform>[1];

/** Compiles `code`, runs `use` with the transform, and disposes it whatever happens. */
export async function withTransform(code: string, use: (transform: Transform) => Promise<void>, options?: TransformOptions): Promise<void> {
  const transform = await compileTransform(code, options);
  try {
    await use(transform);
  } finally {
    transform.dispose();
  }
}
