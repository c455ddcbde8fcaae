import { TimeoutError } from '../../errors';
import type { HttpRequest, HttpResponse, Transport } from '../../transport/transport';

/** The part of an axios instance the classic SDK used: `post(url, data, config)`. */
export interface AxiosLike {
  post(url: string, data: unknown, config: Record<string, unknown>): Promise<{ status: number; headers?: unknown; data?: unknown }>;
}

function header(headers: unknown, name: string): string | undefined {
  if (typeof headers !== 'object' || headers === null) return undefined;
  const get = (headers as { get?: unknown }).get;
  if (typeof get === 'function') {
    const value: unknown = get.call(headers, name);
    if (value !== undefined && value !== null) return String(value);
  }
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name && value !== undefined && value !== null) return String(value);
  }
  return undefined;
}

/**
 * Sends through the caller's axios instance (the classic `axiosInstance` option: proxies,
 * agents, interceptors), with eventrelay's policy: every status is an answer (no throwing on
 * 4xx/5xx), no redirects, the body sent as the exact string made once.
 */
export class AxiosTransport implements Transport {
  constructor(private readonly axios: AxiosLike) {}

  async send(request: HttpRequest): Promise<HttpResponse> {
    try {
      const response = await this.axios.post(request.url.href, typeof request.body === 'string' ? request.body : request.body.toString(), {
        headers: { ...request.headers },
        timeout: request.timeout,
        maxRedirects: 0,
        validateStatus: () => true,
        transformRequest: [(data: unknown) => data],
        responseType: 'text',
        transformResponse: [(data: unknown) => data],
      });
      const body = request.readBody && typeof response.data === 'string' ? response.data : undefined;
      return { status: response.status, retryAfter: header(response.headers, 'retry-after'), body };
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (code === 'ECONNABORTED' || code === 'ETIMEDOUT') throw new TimeoutError(request.timeout, { cause: error });
      throw error;
    }
  }
}
